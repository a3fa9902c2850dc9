# The felix-broker image (deploy/README.md, "Shared facts"). Built by deploy/docker/build-images.sh
# with the build context set to the `pnpm deploy --prod` output of @felix/broker, so the build
# reaches no registry and the image holds production dependencies only. No secret and no CA
# bundle of the build host goes in: certificates and tokens are mounted at run time.
ARG NODE_IMAGE=node:20-bookworm-slim
FROM ${NODE_IMAGE}

# A fixed uid/gid so volumes, Kubernetes securityContext and compose agree on ownership.
RUN echo 'felix:x:10001:10001:felix:/var/lib/felix:/usr/sbin/nologin' >> /etc/passwd \
 && echo 'felix:x:10001:' >> /etc/group \
 && mkdir -p /var/lib/felix \
 && chown 10001:10001 /var/lib/felix

WORKDIR /app
# Root-owned and so read-only to the service user: the code cannot be rewritten at run time.
COPY . /app

ENV NODE_ENV=production \
    FELIX_BROKER_HOST=0.0.0.0 \
    FELIX_BROKER_HTTP_HOST=0.0.0.0 \
    FELIX_DURABLE_STORAGE_DIR=/var/lib/felix

USER 10001:10001
VOLUME ["/var/lib/felix"]
EXPOSE 5000/udp 5000/tcp 7000/tcp 8080/tcp

# Slim images carry no curl: node asks /live itself. The broker serves it once it is listening.
HEALTHCHECK --interval=2s --timeout=2s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.FELIX_BROKER_HTTP_PORT||8080)+'/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# Exec form: node is PID 1 and gets SIGTERM itself; the broker drains on it (src/main.ts).
# The flags are services/broker/node-flags.json (scripts/deploy-files.test.ts keeps them equal).
ENTRYPOINT ["node", "--initial-old-space-size=256", "dist/main.js"]
