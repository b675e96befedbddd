package main

import (
	"archive/tar"
	"crypto/sha256"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/validate"
)

// summary is what a build made, printed for the user.
type summary struct {
	index     v1.Hash
	images    []imageSummary
	layoutSz  int64
	tarballSz int64
	tarballID string
}

type imageSummary struct {
	platform string
	digest   v1.Hash
	layers   []int64 // compressed sizes, base first
}

// build writes the layout (and tarball) of the options' index, reads the
// layout back and validates every blob of it.
func build(o options) (summary, error) {
	var sum summary
	idx, err := o.index()
	if err != nil {
		return sum, err
	}
	if err := os.RemoveAll(o.layoutDir); err != nil {
		return sum, fmt.Errorf("removing old layout: %w", err)
	}
	lp, err := layout.Write(o.layoutDir, empty.Index)
	if err != nil {
		return sum, fmt.Errorf("writing layout %s: %w", o.layoutDir, err)
	}
	// containerd (ctr import, kind load) names the image by the first
	// annotation, Docker and the OCI spec read the tag from the second.
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"io.containerd.image.name":          o.repo + ":" + o.tag,
		"org.opencontainers.image.ref.name": o.tag,
	})); err != nil {
		return sum, fmt.Errorf("writing image index: %w", err)
	}
	if sum, err = readBack(o.layoutDir); err != nil {
		return sum, err
	}
	if sum.layoutSz, err = dirSize(o.layoutDir); err != nil {
		return sum, err
	}
	if o.tarball != "" {
		if sum.tarballSz, sum.tarballID, err = tarLayout(o.layoutDir, o.tarball, o.created); err != nil {
			return sum, err
		}
	}
	return sum, nil
}

// readBack opens the written layout, validates its index (every manifest,
// config and layer against its digest) and summarises it.
func readBack(dir string) (summary, error) {
	var sum summary
	top, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return sum, fmt.Errorf("reading layout back: %w", err)
	}
	m, err := top.IndexManifest()
	if err != nil {
		return sum, fmt.Errorf("reading index.json: %w", err)
	}
	if len(m.Manifests) != 1 {
		return sum, fmt.Errorf("index.json lists %d entries, want the one image index", len(m.Manifests))
	}
	sum.index = m.Manifests[0].Digest
	idx, err := top.ImageIndex(sum.index)
	if err != nil {
		return sum, fmt.Errorf("opening image index: %w", err)
	}
	if err := validate.Index(idx); err != nil {
		return sum, fmt.Errorf("validating the written image: %w", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return sum, fmt.Errorf("reading image index: %w", err)
	}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return sum, fmt.Errorf("opening image %s: %w", d.Digest, err)
		}
		mf, err := img.Manifest()
		if err != nil {
			return sum, fmt.Errorf("reading manifest %s: %w", d.Digest, err)
		}
		s := imageSummary{platform: d.Platform.String(), digest: d.Digest}
		for _, l := range mf.Layers {
			s.layers = append(s.layers, l.Size)
		}
		sum.images = append(sum.images, s)
	}
	return sum, nil
}

// tarLayout writes the layout folder as one tar archive: entries sorted, all
// owned by root with one mtime and modes normalised (layout.Write leaves the
// blobs with mixed modes), so the same layout gives the same archive.
func tarLayout(dir, out string, mtime time.Time) (int64, string, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		paths = append(paths, p)
		return nil
	})
	if err != nil {
		return 0, "", fmt.Errorf("listing layout: %w", err)
	}
	sort.Strings(paths)
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return 0, "", fmt.Errorf("creating %s: %w", filepath.Dir(out), err)
	}
	f, err := os.Create(out)
	if err != nil {
		return 0, "", fmt.Errorf("creating tarball: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(f, h))
	for _, p := range paths {
		if err := addToTar(tw, dir, p, mtime); err != nil {
			return 0, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return 0, "", fmt.Errorf("closing tarball: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		return 0, "", fmt.Errorf("tarball: %w", err)
	}
	return st.Size(), fmt.Sprintf("sha256:%x", h.Sum(nil)), f.Close()
}

func addToTar(tw *tar.Writer, dir, p string, mtime time.Time) error {
	st, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("tarball: %w", err)
	}
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return fmt.Errorf("tarball: %w", err)
	}
	hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: mtime, Typeflag: tar.TypeReg,
		Size: st.Size(), Format: tar.FormatUSTAR}
	if st.IsDir() {
		hdr.Name, hdr.Mode, hdr.Typeflag, hdr.Size = hdr.Name+"/", 0o755, tar.TypeDir, 0
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return fmt.Errorf("tarball %s: %w", rel, err)
	}
	if st.IsDir() {
		return nil
	}
	src, err := os.Open(p)
	if err != nil {
		return fmt.Errorf("tarball: %w", err)
	}
	defer src.Close()
	if _, err := io.Copy(tw, src); err != nil {
		return fmt.Errorf("tarball %s: %w", rel, err)
	}
	return nil
}

func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("measuring layout: %w", err)
	}
	return n, nil
}

func (s summary) print(w io.Writer, o options, took time.Duration) {
	fmt.Fprintf(w, "image %s:%s  index %s  (%s, built in %.1fs)\n", o.repo, o.tag, s.index, o.layoutDir, took.Seconds())
	for _, i := range s.images {
		fmt.Fprintf(w, "  %-12s %s  layers (compressed):", i.platform, i.digest)
		var total int64
		for _, l := range i.layers {
			fmt.Fprintf(w, " %s", mb(l))
			total += l
		}
		fmt.Fprintf(w, "  total %s\n", mb(total))
	}
	fmt.Fprintf(w, "  layout %s", mb(s.layoutSz))
	if o.tarball != "" {
		fmt.Fprintf(w, "; tarball %s %s %s", o.tarball, mb(s.tarballSz), s.tarballID)
	}
	fmt.Fprintln(w)
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }
