# syntax=docker/dockerfile:1
# The Apiary manager image for those who build with Docker (or any BuildKit):
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg COMMIT=$(git rev-parse HEAD) \
#     --build-arg SOURCE_DATE_EPOCH=$(git log -1 --format=%ct) -t apiary:dev .
# It gives what `make image` builds without Docker: the same static binary
# (built by the Makefile's `binary` target, so the flags live in one place)
# as /manager on distroless static:nonroot, user 65532. VERSION defaults to
# the chart's appVersion. test/image checks this file against the Makefile.

ARG GO_VERSION=1.26.8

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
ARG TARGETOS TARGETARCH
ARG VERSION=""
ARG COMMIT=unknown
ARG SOURCE_DATE_EPOCH=0
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    make binary BINARY_OS=${TARGETOS} BINARY_ARCH=${TARGETARCH} BINARY_OUT=/out/manager \
      COMMIT=${COMMIT} SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH} ${VERSION:+VERSION=${VERSION}}

FROM gcr.io/distroless/static:nonroot
LABEL org.opencontainers.image.title="apiary" \
      org.opencontainers.image.source="https://github.com/apiaryhq/apiary" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/manager /manager
USER 65532:65532
WORKDIR /
ENTRYPOINT ["/manager"]
