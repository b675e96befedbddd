package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The manager's path in the image and its entrypoint.
const entrypoint = "/manager"

// env is the environment distroless' static images set, so that the image of
// the Dockerfile and this one run the manager alike.
var env = []string{
	"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	"SSL_CERT_FILE=/" + certsBundle,
}

// annotations are the OCI annotations of the index and its images, and the
// labels of each image's config.
func (o options) annotations() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "apiary",
		"org.opencontainers.image.description": "Apiary, a Kubernetes controller for k0rdent management clusters",
		"org.opencontainers.image.source":      o.source,
		"org.opencontainers.image.url":         o.source,
		"org.opencontainers.image.revision":    o.revision,
		"org.opencontainers.image.version":     o.version,
		"org.opencontainers.image.licenses":    o.licenses,
		"org.opencontainers.image.created":     o.created.Format("2006-01-02T15:04:05Z"),
	}
}

// layerFromTar makes a gzip-compressed OCI layer of an uncompressed tar,
// compressed once and kept.
func layerFromTar(b []byte) (v1.Layer, error) {
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(b)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.DefaultCompression),
		tarball.WithCompressedCaching)
	if err != nil {
		return nil, fmt.Errorf("making layer: %w", err)
	}
	return l, nil
}

// image is the image of one platform: the shared base, then the manager.
func (o options) image(platform string, base v1.Layer) (v1.Image, error) {
	bin, err := os.ReadFile(o.binaries[platform])
	if err != nil {
		return nil, fmt.Errorf("reading the %s binary: %w", platform, err)
	}
	app, err := tarEntries([]entry{{name: strings.TrimPrefix(entrypoint, "/"), mode: 0o755, body: bin}}, o.created)
	if err != nil {
		return nil, err
	}
	appLayer, err := layerFromTar(app)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	created := v1.Time{Time: o.created}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: v1.History{Created: created,
			CreatedBy: "apiary-image: base (nonroot 65532, CA certificates)", Comment: "hack/image"}},
		mutate.Addendum{Layer: appLayer, History: v1.History{Created: created,
			CreatedBy: "apiary-image: COPY manager " + entrypoint, Comment: "hack/image"}},
	)
	if err != nil {
		return nil, fmt.Errorf("appending layers: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading config: %w", err)
	}
	cf = cf.DeepCopy()
	osName, arch, _ := strings.Cut(platform, "/")
	cf.OS, cf.Architecture, cf.Created = osName, arch, created
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", nonrootUID, nonrootUID),
		Entrypoint: []string{entrypoint},
		WorkingDir: "/",
		Env:        env,
		Labels:     o.annotations(),
	}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, fmt.Errorf("setting config: %w", err)
	}
	return mutate.Annotations(img, o.annotations()).(v1.Image), nil
}

// index is the multi-arch image: one manifest per platform.
func (o options) index() (v1.ImageIndex, error) {
	baseEnts, err := baseEntries()
	if err != nil {
		return nil, err
	}
	baseTar, err := tarEntries(baseEnts, o.created)
	if err != nil {
		return nil, err
	}
	base, err := layerFromTar(baseTar)
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range o.platforms() {
		img, err := o.image(p, base)
		if err != nil {
			return nil, err
		}
		osName, arch, _ := strings.Cut(p, "/")
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: osName, Architecture: arch}},
		})
	}
	return mutate.Annotations(idx, o.annotations()).(v1.ImageIndex), nil
}
