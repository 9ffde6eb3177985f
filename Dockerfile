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
COPY scripts ./scripts
# The test suites and benchmarks stay out of the image: the build compiles what is there.
RUN npm run build && npm prune --omit=dev

FROM node:20.20-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=10001:10001 /app/package.json ./
COPY --from=build --chown=10001:10001 /app/node_modules ./node_modules
COPY --from=build --chown=10001:10001 /app/dist ./dist
USER 10001:10001
EXPOSE 8080 8081
ENTRYPOINT ["node", "dist/cli/agentplane.js"]
CMD ["api"]
