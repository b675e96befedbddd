package activity

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// countingReader counts what is read of it.
type countingReader struct {
	r    io.Reader
	read int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += n
	return n, err
}

func (c *countingReader) Close() error { return nil }

// response is an HTTP answer of body with a Content-Length (-1: unknown).
func response(body string, length int64) *http.Response {
	return &http.Response{StatusCode: http.StatusOK, ContentLength: length, Body: &countingReader{r: strings.NewReader(body)}}
}

// checkInvariants fails when an observation breaks what every parser promises.
func checkInvariants(t *testing.T, obs Observation, err error, now time.Time) {
	t.Helper()
	if err != nil && obs != (Observation{}) {
		t.Fatalf("an error with an observation: %+v, %v", obs, err)
	}
	if obs.Known && obs.LastActivity.IsZero() {
		t.Fatalf("known with a zero time: %+v", obs)
	}
	if !obs.Known && !obs.LastActivity.IsZero() {
		t.Fatalf("a time that is not known: %+v", obs)
	}
	if obs.LastActivity.After(now) {
		t.Fatalf("activity %s after now %s", obs.LastActivity, now)
	}
	if obs.Known && obs.LastActivity.Before(minValid) {
		t.Fatalf("activity %s before 2000", obs.LastActivity)
	}
	if len(obs.Detail) > MaxDetail {
		t.Fatalf("detail of %d bytes", len(obs.Detail))
	}
}

// fuzzNow is the time of every fuzzed observation, varied by the fuzzer.
func fuzzNow(offset int64) time.Time {
	return now.Add(time.Duration(offset % int64(100*365*24*time.Hour)))
}

func FuzzParseJupyter(f *testing.F) {
	for _, s := range []string{
		`{"started": "2026-12-03T09:00:00.000000Z", "last_activity": "2026-12-03T11:15:30.123456Z", "connections": 1, "kernels": 2}`,
		`{"last_activity": "9999-12-31T23:59:59.999999999+23:59"}`, `{"last_activity": "0000-01-01T00:00:00Z"}`,
		`{"last_activity": null}`, `null`, `{"kernels": "x"}`, `[]`,
	} {
		f.Add([]byte(s), int64(0))
	}
	f.Fuzz(func(t *testing.T, body []byte, offset int64) {
		n := fuzzNow(offset)
		obs, err := parseJupyter(body, n)
		checkInvariants(t, obs, err, n)
	})
}

func FuzzParseCodeServer(f *testing.F) {
	for _, s := range []string{
		`{"status":"alive","lastHeartbeat":1764760530123}`, `{"status":"expired","lastHeartbeat":0}`,
		`{"lastHeartbeat":-9223372036854775808}`, `{"lastHeartbeat":9223372036854775807}`, `{"lastHeartbeat":1e3}`,
	} {
		f.Add([]byte(s), int64(0))
	}
	f.Fuzz(func(t *testing.T, body []byte, offset int64) {
		n := fuzzNow(offset)
		obs, err := parseCodeServer(body, n)
		checkInvariants(t, obs, err, n)
	})
}

func FuzzParsePrometheus(f *testing.F) {
	for _, s := range []string{
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"namespace":"ws-a"},"value":[1764763200.5,"37.5"]}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1764763200,"NaN"]},{"value":[0,"-Inf"]}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[1,{"count":"1","sum":"1","buckets":[[0,"0","1","1"]]}]}]}}`,
		`{"status":"success","data":{"resultType":"vector","result":[]}}`,
		`{"status":"error","errorType":"timeout","error":"query timed out"}`,
	} {
		f.Add([]byte(s), int64(0), int64(30*time.Minute), 5.0)
	}
	f.Fuzz(func(t *testing.T, body []byte, offset, window int64, threshold float64) {
		n := fuzzNow(offset)
		obs, err := parsePrometheus(body, n, time.Duration(window), threshold)
		checkInvariants(t, obs, err, n)
	})
}
