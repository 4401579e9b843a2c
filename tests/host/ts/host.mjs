// A test-only MCP host on the TypeScript SDK: it starts `osbp mcp` over stdio, plays the user, books once.
//
//   node host.mjs --sdk v1|v2 --answer accept|decline|none --platform-url URL --plan PLAN.json -- CMD ARGS...
//
// --sdk v1: @modelcontextprotocol/sdk (its newest revision is 2025-11-25: the server elicits in-request).
// --sdk v2: @modelcontextprotocol/client pinned to 2026-07-28 (the server answers `input_required`, the SDK
//           fulfils it through the same elicitation handler and retries the call).
// --answer: what the user answers every form the host shows; `none` declares no elicitation at all (the
//           spec's token path).
// The plan (JSON) names the mandate, service, schedule, date, customer and idempotency key; the host
// describes the service, finds the day's slots and books the first one. The server command after `--` gets
// the host's OSBP_* environment plus OSBP_PLATFORM_BASE_URL. One JSON line on stdout:
//   {"sdk", "sdk_version", "protocol_version", "shown": [form messages], "slot", "envelope"}.
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

const SDKS = {
  v1: { name: "@modelcontextprotocol/sdk", load: loadV1 },
  v2: { name: "@modelcontextprotocol/client", load: loadV2 },
};
const ANSWERS = ["accept", "decline", "none"];

function fail(message) {
  process.stderr.write(`ts host: ${message}\n`);
  process.exit(2);
}

function options() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      sdk: { type: "string" },
      answer: { type: "string" },
      "platform-url": { type: "string" },
      plan: { type: "string" },
    },
  });
  if (!(values.sdk in SDKS)) fail(`--sdk must be one of ${Object.keys(SDKS).join(", ")}`);
  if (!ANSWERS.includes(values.answer)) fail(`--answer must be one of ${ANSWERS.join(", ")}`);
  if (!values["platform-url"]) fail("--platform-url is required");
  if (!values.plan) fail("--plan is required");
  if (positionals.length === 0) fail("the server command goes after --");
  return { ...values, command: positionals };
}

function sdkVersion(name) {
  const url = new URL(`./node_modules/${name}/package.json`, import.meta.url);
  return JSON.parse(readFileSync(url, "utf8")).version;
}

function serverEnv(getDefaultEnvironment, platformUrl) {
  const osbp = Object.fromEntries(Object.entries(process.env).filter(([key]) => key.startsWith("OSBP_")));
  return { ...getDefaultEnvironment(), ...osbp, OSBP_PLATFORM_BASE_URL: platformUrl };
}

// The user: records what the host showed them and answers it.
function user(answer, shown) {
  return async (request) => {
    const params = request.params;
    shown.push(params.message);
    if (answer !== "accept") return { action: "decline" };
    const fields = Object.keys(params.requestedSchema?.properties ?? {});
    return { action: "accept", content: fields.includes("confirm") ? { confirm: true } : {} };
  };
}

function capabilities(answer) {
  return answer === "none" ? {} : { elicitation: { form: {} } };
}

async function loadV1(opts, shown) {
  const { Client } = await import("@modelcontextprotocol/sdk/client/index.js");
  const { StdioClientTransport, getDefaultEnvironment } = await import("@modelcontextprotocol/sdk/client/stdio.js");
  const { ElicitRequestSchema } = await import("@modelcontextprotocol/sdk/types.js");
  // v1 tells only a transport which revision the server agreed (setProtocolVersion, an optional hook).
  class Recording extends StdioClientTransport {
    setProtocolVersion(version) {
      this.protocolVersion = version;
    }
  }
  const [command, ...args] = opts.command;
  const transport = new Recording({ command, args, env: serverEnv(getDefaultEnvironment, opts["platform-url"]) });
  const client = new Client({ name: "osbp-ts-host", version: "0" }, { capabilities: capabilities(opts.answer) });
  if (opts.answer !== "none") client.setRequestHandler(ElicitRequestSchema, user(opts.answer, shown));
  await client.connect(transport);
  return { client, protocolVersion: () => transport.protocolVersion };
}

async function loadV2(opts, shown) {
  const { Client } = await import("@modelcontextprotocol/client");
  const { StdioClientTransport, getDefaultEnvironment } = await import("@modelcontextprotocol/client/stdio");
  const [command, ...args] = opts.command;
  const transport = new StdioClientTransport({
    command,
    args,
    env: serverEnv(getDefaultEnvironment, opts["platform-url"]),
  });
  const client = new Client(
    { name: "osbp-ts-host", version: "0" },
    { capabilities: capabilities(opts.answer), versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  if (opts.answer !== "none") client.setRequestHandler("elicitation/create", user(opts.answer, shown));
  await client.connect(transport);
  return { client, protocolVersion: () => client.getNegotiatedProtocolVersion() };
}

// A tool's OSBP envelope (structured content; its text block says the same).
async function call(client, name, args) {
  const result = await client.callTool({ name, arguments: args });
  const envelope = result.structuredContent;
  if (JSON.stringify(JSON.parse(result.content[0].text)) !== JSON.stringify(envelope)) {
    fail(`${name}: the text content and the structured content disagree`);
  }
  return envelope;
}

async function book(client, plan) {
  const service = await call(client, "osbp_service_describe", { service_id: plan.service_id });
  if (!service.ok) fail(`service.describe: ${JSON.stringify(service.problem)}`);
  const found = await call(client, "osbp_availability_find", {
    service_id: plan.service_id,
    schedule_id: plan.schedule_id,
    date: plan.date,
  });
  if (!found.ok || found.value.length === 0) fail(`availability.find found no slot: ${JSON.stringify(found)}`);
  const slot = found.value[0];
  const [date, time] = slot.starts_at_local.split("T");
  const envelope = await call(client, "osbp_booking_create", {
    mandate: plan.mandate,
    idempotency_key: plan.idempotency_key,
    service_id: slot.service_id,
    schedule_id: slot.schedule_id,
    provider_id: slot.provider_id,
    date,
    time: time.slice(0, 5),
    customer: plan.customer,
  });
  return { slot, envelope };
}

async function main() {
  const opts = options();
  const plan = JSON.parse(readFileSync(opts.plan, "utf8"));
  const sdk = SDKS[opts.sdk];
  const shown = [];
  const { client, protocolVersion } = await sdk.load(opts, shown);
  try {
    const { slot, envelope } = await book(client, plan);
    const line = {
      sdk: sdk.name,
      sdk_version: sdkVersion(sdk.name),
      protocol_version: protocolVersion(),
      shown,
      slot,
      envelope,
    };
    process.stdout.write(`${JSON.stringify(line)}\n`);
  } finally {
    await client.close();
  }
}

main().catch((error) => fail(error?.stack ?? String(error)));
