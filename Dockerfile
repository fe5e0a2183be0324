# Atrium on Node 20, built and run with the README's own commands: `npm ci`
# (better-sqlite3 compiles from source, and `prepare` builds dist/) and
# `node dist/src/main.js`. Not built by the project's CI, which has no
# container engine: see docs/deployment.md.
FROM node:20-bookworm

# The full bookworm image carries the compiler and python3 better-sqlite3's build needs.
WORKDIR /app
RUN mkdir /data && chown node:node /app /data
USER node

COPY --chown=node:node . .
RUN npm ci --no-audit --no-fund

# All state (the SQLite file, secrets.json, uploads) lives in DATA_DIR. A new named
# volume takes /data's owner (node); a bind-mounted directory must be writable by uid 1000.
ENV DATA_DIR=/data \
    HOST=0.0.0.0 \
    PORT=8080 \
    PUBLIC_URL=http://localhost:8080
VOLUME ["/data"]
EXPOSE 8080

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/v1/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# node itself is PID 1 (no npm or shell in between): `docker stop`'s SIGTERM reaches the
# server, which closes the database and hands running jobs back before it exits.
CMD ["node", "dist/src/main.js"]
