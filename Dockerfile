# The synthetic booking platform (osbp.backend): `docker compose up platform` (or Debian's `docker-compose up
# platform`), then http://127.0.0.1:8400/docs
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
# The osbp namespace package has a part in the repository's osbp/ folder and one in each component folder.
COPY pyproject.toml README.md LICENSE ./
COPY osbp ./osbp
COPY protocol/osbp ./protocol/osbp
COPY backend/osbp ./backend/osbp
COPY adapter/osbp ./adapter/osbp
COPY server/osbp ./server/osbp
COPY demo/osbp ./demo/osbp
COPY conformance/osbp ./conformance/osbp
# With the PostgreSQL driver: the compose file's `postgres` profile runs this image on PostgreSQL.
RUN pip install --no-cache-dir '.[platform,postgres]' \
    && useradd --create-home --uid 10001 osbp \
    && mkdir -p /data \
    && chown osbp /data

USER osbp
VOLUME ["/data"]
EXPOSE 8400
CMD ["osbp", "backend", "--db", "/data/backend.db", "--port", "8400"]
