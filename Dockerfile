# warden in a container: `warden serve --http 0.0.0.0:7331` as a static
# binary on distroless (no shell, no libc), running as nonroot.
#
#   docker build -t warden .
#   docker run -p 7331:7331 -v "$PWD:/etc/warden:ro" \
#     -e WARDEN_SERVER_TOKEN=... warden
#
# Mount at /etc/warden a config.yaml and the tools dir it names (relative
# paths resolve against the config's directory). A non-loopback address needs
# a token (WARDEN_SERVER_TOKEN). With replicas, set WARDEN_MEMORY_BACKEND (a
# postgres:// URL) and WARDEN_SERVER_STATE_KEY: see docs/deploy.md.
#
# An image that starts warm: your project (config.yaml and the tools dir it
# names) baked in, with every module compiled for the build machine's CPU by
# `warden cache warm`, so a pod lists its tools and answers its first call
# without compiling (build on the architecture the pods run on):
#
#   docker build --target warm --build-context project=path/to/project -t my-warden .
#
# Do not mount a volume over /home/nonroot/.cache then: it would hide the
# compiled code the image holds.

# The project a warm image bakes in; --build-context project=DIR replaces it.
FROM scratch AS project

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: a static binary, which distroless/static can run.
RUN CGO_ENABLED=0 GOTOOLCHAIN=local go build -trimpath -ldflags="-s -w" -o /out/warden ./cmd/warden

FROM gcr.io/distroless/static-debian12:nonroot AS warden
# The MCP registry checks that an OCI package names the server it is
# published as (packaging/server.json).
LABEL io.modelcontextprotocol.server.name="io.github.warden-run/warden"
COPY --from=build /out/warden /usr/local/bin/warden
# Compiled tool code is cached under $XDG_CACHE_HOME/warden: keep it in the
# nonroot user's home, which is writable (mount a volume to keep it across
# restarts).
ENV XDG_CACHE_HOME=/home/nonroot/.cache
WORKDIR /etc/warden
USER nonroot:nonroot
EXPOSE 7331
ENTRYPOINT ["/usr/local/bin/warden"]
CMD ["serve", "--config", "/etc/warden/config.yaml", "--http", "0.0.0.0:7331"]

# --target warm: the project and its compiled code in the image. Exec form:
# distroless has no shell. A module that fails to load fails the build.
FROM warden AS warm
COPY --from=project --chown=nonroot:nonroot / /etc/warden/
RUN ["/usr/local/bin/warden", "cache", "warm", "--config", "/etc/warden/config.yaml"]

# The default target: the plain image, the project mounted at run time.
FROM warden
