package main

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"fmt"
	"time"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The nonroot user of the image, as in distroless' static:nonroot.
const (
	nonrootUID  = 65532
	certsBundle = "etc/ssl/certs/ca-certificates.crt"
)

// entry is one file or folder of a layer.
type entry struct {
	name     string
	mode     int64
	uid, gid int
	dir      bool
	body     []byte
}

// baseEntries is the whole base: the nonroot user, name resolution from
// files then DNS, the CA bundle, the nonroot home and a world-writable /tmp.
// No shell, no package database, nothing executable.
func baseEntries() ([]entry, error) {
	certs, err := caBundle()
	if err != nil {
		return nil, err
	}
	return []entry{
		{name: "etc/", mode: 0o755, dir: true},
		{name: "etc/group", mode: 0o644, body: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "etc/nsswitch.conf", mode: 0o644, body: []byte("hosts: files dns\n")},
		{name: "etc/passwd", mode: 0o644, body: []byte(
			"root:x:0:0:root:/root:/sbin/nologin\n" +
				"nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/ssl/", mode: 0o755, dir: true},
		{name: "etc/ssl/certs/", mode: 0o755, dir: true},
		{name: certsBundle, mode: 0o644, body: certs},
		{name: "home/", mode: 0o755, dir: true},
		{name: "home/nonroot/", mode: 0o700, uid: nonrootUID, gid: nonrootUID, dir: true},
		{name: "tmp/", mode: 0o1777, dir: true},
	}, nil
}

// caBundle is the PEM bundle of the NSS roots that golang.org/x/crypto
// ships (pinned by go.sum, so the same on every machine). Roots with a
// constraint PEM cannot express (a distrust-after date) are left out.
func caBundle() ([]byte, error) {
	var buf bytes.Buffer
	n := 0
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		if err := pem.Encode(&buf, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, fmt.Errorf("encoding CA certificate: %w", err)
		}
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("the fallback bundle holds no unconstrained roots")
	}
	return buf.Bytes(), nil
}

// tarEntries writes the entries, in the given order, as an uncompressed tar
// with every time set to mtime, so that the same entries give the same bytes.
func tarEntries(entries []entry, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.gid,
			ModTime: mtime, Format: tar.FormatUSTAR,
		}
		if e.dir {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("writing tar header %s: %w", e.name, err)
		}
		if _, err := tw.Write(e.body); err != nil {
			return nil, fmt.Errorf("writing %s: %w", e.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("closing tar: %w", err)
	}
	return buf.Bytes(), nil
}
