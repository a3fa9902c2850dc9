# The felix-control-plane image (deploy/README.md, "Shared facts"). Built by
# deploy/docker/build-images.sh with the build context set to the `pnpm deploy --prod` output of
# @felix/control-plane, so the build reaches no registry and the image holds production
# dependencies only (better-sqlite3's native module is built on the host against the same Node
# major). No secret and no CA bundle of the build host goes in.
ARG NODE_IMAGE=node:20-bookworm-slim
FROM ${NODE_IMAGE}

# A fixed uid/gid so volumes, Kubernetes securityContext and compose agree on ownership.
RUN echo 'felix:x:10001:10001:felix:/var/lib/felix:/usr/sbin/nologin' >> /etc/passwd \
 && echo 'felix:x:10001:' >> /etc/group \
 && mkdir -p /var/lib/felix \
 && chown 10001:10001 /var/lib/felix

WORKDIR /app
# Root-owned and so read-only to the service user.
COPY . /app

ENV NODE_ENV=production \
    FELIX_CONTROLPLANE_BIND=0.0.0.0:8443 \
    FELIX_CONTROLPLANE_DATA_DIR=/var/lib/felix

USER 10001:10001
VOLUME ["/var/lib/felix"]
EXPOSE 8443/tcp

# Slim images carry no curl: node asks the liveness probe itself.
HEALTHCHECK --interval=2s --timeout=2s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8443/v1/system/live').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]

# Exec form: node is PID 1 and gets SIGTERM itself; the control plane stops on it (src/main.ts).
ENTRYPOINT ["node", "dist/main.js"]
