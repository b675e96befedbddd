package activity

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// MaxBody bounds the body of an answer, in bytes: a workspace's status is a
// few dozen bytes, a Prometheus vector of one sample a few hundred.
const MaxBody = 16 << 10

// ErrTooLarge is returned for an answer longer than MaxBody.
var ErrTooLarge = errors.New("answer too large")

// ErrMalformed is returned for an answer that is not what its format says.
var ErrMalformed = errors.New("malformed answer")

// readBounded reads a response's body, failing with ErrTooLarge beyond
// MaxBody bytes: at once when its Content-Length says so, else without
// reading more than one byte past it.
func readBounded(resp *http.Response) ([]byte, error) {
	if resp.ContentLength > MaxBody {
		return nil, fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, resp.ContentLength, MaxBody)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("reading the answer: %w", err)
	}
	if len(body) > MaxBody {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, MaxBody)
	}
	return body, nil
}

// decodeJSON decodes exactly one JSON value of body into v: trailing data
// and values of the wrong type are errors; unknown fields are ignored, so
// that a newer server's additions do not blind the probe. Errors never
// quote the body.
func decodeJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: not the expected JSON object", ErrMalformed)
	}
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("%w: data after the JSON object", ErrMalformed)
	}
	return nil
}

// jupyterStatus is what jupyter_server's /api/status answers that is read.
type jupyterStatus struct {
	LastActivity *string `json:"last_activity"`
	Kernels      *int64  `json:"kernels"`
	Connections  *int64  `json:"connections"`
}

// parseJupyter reads jupyter_server's /api/status: its last_activity, an
// RFC 3339 time. Asking it does not count as activity.
func parseJupyter(body []byte, now time.Time) (Observation, error) {
	var s jupyterStatus
	if err := decodeJSON(body, &s); err != nil {
		return Observation{}, fmt.Errorf("jupyter status: %w", err)
	}
	if s.LastActivity == nil {
		return Observation{Detail: "jupyter status has no last_activity"}, nil
	}
	ts, err := time.Parse(time.RFC3339Nano, *s.LastActivity)
	if err != nil {
		return Observation{}, fmt.Errorf("jupyter status: %w: last_activity is not an RFC 3339 time", ErrMalformed)
	}
	detail := "jupyter last activity " + fmtTime(ts)
	if s.Kernels != nil && s.Connections != nil {
		detail += fmt.Sprintf(", %d kernels, %d connections", *s.Kernels, *s.Connections)
	}
	return at(ts, now, detail), nil
}

// codeServerHealth is what code-server's /healthz answers.
type codeServerHealth struct {
	Status        *string `json:"status"`
	LastHeartbeat *int64  `json:"lastHeartbeat"`
}

// parseCodeServer reads code-server's /healthz: its lastHeartbeat, in
// milliseconds since the epoch, 0 before any activity. Asking it does not
// count as activity.
func parseCodeServer(body []byte, now time.Time) (Observation, error) {
	var h codeServerHealth
	if err := decodeJSON(body, &h); err != nil {
		return Observation{}, fmt.Errorf("code-server health: %w", err)
	}
	status := "status unknown"
	if h.Status != nil {
		switch *h.Status {
		case "alive", "expired":
			status = "status " + *h.Status
		default:
			status = "status other"
		}
	}
	if h.LastHeartbeat == nil || *h.LastHeartbeat == 0 {
		return Observation{Detail: "code-server has no heartbeat yet, " + status}, nil
	}
	ts := time.UnixMilli(*h.LastHeartbeat)
	return at(ts, now, "code-server last heartbeat "+fmtTime(ts)+", "+status), nil
}
