# The synthetic booking platform (osbp.backend): `docker compose up platform` (or Debian's `docker-compose up
# platform`), then http://127.0.0.1:8400/docs
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
# The distribution maps every top-level component folder into the osbp namespace, so all of them are copied.
COPY pyproject.toml README.md LICENSE ./
COPY osbp ./osbp
COPY protocol ./protocol
COPY backend ./backend
COPY adapter ./adapter
COPY server ./server
COPY demo ./demo
COPY conformance ./conformance
# With the PostgreSQL driver: the compose file's `postgres` profile runs this image on PostgreSQL.
RUN pip install --no-cache-dir '.[platform,postgres]' \
    && useradd --create-home --uid 10001 osbp \
    && mkdir -p /data \
    && chown osbp /data

USER osbp
VOLUME ["/data"]
EXPOSE 8400
CMD ["osbp", "backend", "--db", "/data/backend.db", "--port", "8400"]
