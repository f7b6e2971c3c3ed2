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

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO_ENABLED=0: a static binary, which distroless/static can run.
RUN CGO_ENABLED=0 GOTOOLCHAIN=local go build -trimpath -ldflags="-s -w" -o /out/warden ./cmd/warden

FROM gcr.io/distroless/static-debian12:nonroot
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
