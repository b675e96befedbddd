// Package activity asks a workspace when it was last active. A Source asks
// one kind of witness: the workspace's own server through the child cluster
// API server's Service proxy (Jupyter's /api/status, code-server's
// /healthz), or a Prometheus holding the GPU utilisation of the workspace's
// namespace. A Prober bounds how many are asked at once and for how long,
// turns every failure into an unknown observation and counts the probes.
//
// Unknown is a first-class answer: a workspace whose activity cannot be read
// is never called idle. What a source answers is its tenant's text: bodies
// are bounded before they are read, decoded into small structs, and never
// quoted; times after now are taken as now. A target's token never reaches
// an error, a detail or a log.
package activity

import (
	"context"
	"net/url"
	"strings"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/types"
)

// Format names what a target answers, and so which source asks it.
type Format string

const (
	// JupyterStatus is jupyter_server's GET /api/status: its last_activity.
	JupyterStatus Format = "JupyterStatus"
	// CodeServerHealthz is code-server's GET /healthz: its lastHeartbeat.
	CodeServerHealthz Format = "CodeServerHealthz"
	// PrometheusGPU is the GPU utilisation (DCGM) of the workspace's
	// namespace over Target.Window, as a Prometheus holds it.
	PrometheusGPU Format = "PrometheusGPU"
)

// label is the source label of the probe metrics: one of the formats above,
// else "other", so that labels stay a fixed set.
func (f Format) label() string {
	switch f {
	case JupyterStatus, CodeServerHealthz, PrometheusGPU:
		return string(f)
	}
	return "other"
}

// DefaultPath is the path a format is asked at when Target.Path is empty.
func DefaultPath(f Format) string {
	switch f {
	case JupyterStatus:
		return "api/status"
	case CodeServerHealthz:
		return "healthz"
	}
	return ""
}

// Target is one workspace to ask.
type Target struct {
	// Cluster is the ClusterDeployment of the child cluster the workspace runs on.
	Cluster types.NamespacedName
	// Namespace is the workspace's namespace on the child, ws-<name>.
	Namespace string
	// Service and Port are the Service of the workspace's server on the
	// child, and its port, for the endpoint formats.
	Service string
	Port    int32
	// Path is asked through the Service's proxy, relative; empty for
	// DefaultPath(Format).
	Path string
	// Format is what the target answers.
	Format Format
	// Token authenticates to the workspace's server (Jupyter's ?token=); it
	// may be empty. It is never logged nor put in an error or a detail.
	Token string
	// Window is the span of GPU utilisation PrometheusGPU looks back on.
	Window time.Duration
	// Threshold is the GPU utilisation, in percent, from which the
	// workspace is active (PrometheusGPU); the source's when zero.
	Threshold float64
}

// Observation is what a source said about a workspace's activity.
type Observation struct {
	// LastActivity is when the workspace was last active, never after the
	// time of the observation; zero unless Known.
	LastActivity time.Time
	// Known is false when the source could not say: no answer, an error, an
	// answer without a usable time. Unknown is never idle.
	Known bool
	// Refused is true when the target was not asked because what it names
	// is not what the workspace's release makes (RefusedError).
	Refused bool
	// Detail says, in at most MaxDetail bytes of printable text, what the
	// source answered or why it could not; it quotes no tenant text.
	Detail string
}

// Source asks one kind of witness when a workspace was last active, at now.
// An error means the witness could not be asked or read; an Observation
// with Known false and no error means it answered without a usable time.
type Source interface {
	Observe(ctx context.Context, t Target, now time.Time) (Observation, error)
}

// MaxDetail bounds Observation.Detail, in bytes.
const MaxDetail = 200

// minValid is the earliest activity time believed: anything before is a
// clock or a server that was never set.
var minValid = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// at returns an Observation of activity at ts, seen at now: ts after now is
// taken as now, ts before 2000 is unknown.
func at(ts, now time.Time, detail string) Observation {
	if ts.Before(minValid) {
		return Observation{Detail: "activity time before 2000: " + detail}
	}
	if ts.After(now) {
		ts, detail = now, detail+" (in the future; taken as now)"
	}
	return Observation{LastActivity: ts, Known: true, Detail: detail}
}

// safeText returns s with the token (raw and URL-escaped) redacted, control
// and other unprintable characters replaced, cut to MaxDetail bytes.
func safeText(s, token string) string {
	s = redact(s, token)
	s = strings.Map(func(r rune) rune {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, s)
	if len(s) <= MaxDetail {
		return s
	}
	cut := MaxDetail - len("…")
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// fmtTime formats a time for a detail.
func fmtTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// redact replaces the token, raw and URL-escaped, in s.
func redact(s, token string) string {
	if token == "" {
		return s
	}
	for _, form := range []string{token, url.QueryEscape(token), url.PathEscape(token)} {
		s = strings.ReplaceAll(s, form, "[redacted]")
	}
	return s
}
