package activity

import (
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

var now = time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)

// parserCase is an answer and what a parser makes of it.
type parserCase struct {
	body    string
	want    time.Time // zero: not Known
	err     error     // nil: no error; else errors.Is
	details []string  // substrings of the Detail
}

func checkParser(t *testing.T, parse func([]byte, time.Time) (Observation, error), cases map[string]parserCase) {
	t.Helper()
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			obs, err := parse([]byte(c.body), now)
			if c.err != nil {
				g.Expect(err).To(MatchError(c.err))
				g.Expect(obs).To(BeZero())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(obs.Known).To(Equal(!c.want.IsZero()))
			g.Expect(obs.LastActivity.Equal(c.want)).To(BeTrue(), "got %s", obs.LastActivity)
			for _, d := range c.details {
				g.Expect(obs.Detail).To(ContainSubstring(d))
			}
		})
	}
}

func TestParseJupyter(t *testing.T) {
	last := time.Date(2026, 12, 3, 11, 15, 30, 123456000, time.UTC)
	checkParser(t, parseJupyter, map[string]parserCase{
		"jupyter_server's answer": {body: `{"started": "2026-12-03T09:00:00.000000Z", "last_activity": "2026-12-03T11:15:30.123456Z", "connections": 1, "kernels": 2}`,
			want: last, details: []string{"2026-12-03T11:15:30Z", "2 kernels", "1 connections"}},
		"offset instead of Z":    {body: `{"last_activity": "2026-12-03T12:15:30.123456+01:00"}`, want: last},
		"unknown fields ignored": {body: `{"last_activity": "2026-12-03T11:15:30.123456Z", "new_field": {"a": [1]}}`, want: last},
		"in the future":          {body: `{"last_activity": "2027-01-01T00:00:00Z"}`, want: now, details: []string{"taken as now"}},
		"before 2000":            {body: `{"last_activity": "1970-01-01T00:00:00Z"}`, details: []string{"before 2000"}},
		"no last_activity":       {body: `{"kernels": 0}`, details: []string{"no last_activity"}},
		"null last_activity":     {body: `{"last_activity": null}`, details: []string{"no last_activity"}},
		"null":                   {body: `null`, details: []string{"no last_activity"}},
		"naive time":             {body: `{"last_activity": "2026-12-03T11:15:30.123456"}`, err: ErrMalformed},
		"not a time":             {body: `{"last_activity": "yesterday"}`, err: ErrMalformed},
		"a number":               {body: `{"last_activity": 1764760530}`, err: ErrMalformed},
		"kernels a string":       {body: `{"last_activity": "2026-12-03T11:15:30Z", "kernels": "2"}`, err: ErrMalformed},
		"trailing data":          {body: `{"last_activity": "2026-12-03T11:15:30Z"} {}`, err: ErrMalformed},
		"an array":               {body: `[]`, err: ErrMalformed},
		"HTML login page":        {body: `<html><body>Log in</body></html>`, err: ErrMalformed},
		"empty":                  {body: ``, err: ErrMalformed},
	})
}

func TestParseCodeServer(t *testing.T) {
	last := time.UnixMilli(1764760530123)
	checkParser(t, parseCodeServer, map[string]parserCase{
		"alive":         {body: `{"status":"alive","lastHeartbeat":1764760530123}`, want: last, details: []string{"status alive", fmtTime(last)}},
		"expired":       {body: `{"status":"expired","lastHeartbeat":1764760530123}`, want: last, details: []string{"status expired"}},
		"other status":  {body: `{"status":"<script>","lastHeartbeat":1764760530123}`, want: last, details: []string{"status other"}},
		"no heartbeat":  {body: `{"status":"expired","lastHeartbeat":0}`, details: []string{"no heartbeat"}},
		"missing":       {body: `{"status":"alive"}`, details: []string{"no heartbeat"}},
		"negative":      {body: `{"lastHeartbeat":-5}`, details: []string{"before 2000"}},
		"seconds":       {body: `{"lastHeartbeat":1764760530}`, details: []string{"before 2000"}},
		"in the future": {body: `{"lastHeartbeat":9223372036854775807}`, want: now, details: []string{"taken as now"}},
		"fraction":      {body: `{"lastHeartbeat":1764760530123.5}`, err: ErrMalformed},
		"overflow":      {body: `{"lastHeartbeat":9223372036854775808}`, err: ErrMalformed},
		"a string":      {body: `{"lastHeartbeat":"1764760530123"}`, err: ErrMalformed},
		"trailing":      {body: `{"lastHeartbeat":1764760530123}x`, err: ErrMalformed},
	})
}

func TestParsePrometheus(t *testing.T) {
	const window = 30 * time.Minute
	vector := func(values ...string) string {
		var samples []string
		for _, v := range values {
			samples = append(samples, `{"metric":{},"value":[1764763200,"`+v+`"]}`)
		}
		return `{"status":"success","data":{"resultType":"vector","result":[` + strings.Join(samples, ",") + `]}}`
	}
	parse := func(body []byte, now time.Time) (Observation, error) { return parsePrometheus(body, now, window, 5) }
	checkParser(t, parse, map[string]parserCase{
		"busy":               {body: vector("37.5"), want: now, details: []string{"up to 37.5%", "over 30m", "threshold 5%"}},
		"at the threshold":   {body: vector("5"), want: now},
		"idle":               {body: vector("4.9"), want: now.Add(-window), details: []string{"at most 4.9%"}},
		"zero":               {body: vector("0"), want: now.Add(-window)},
		"highest counts":     {body: vector("1", "80"), want: now},
		"no series":          {body: vector(), details: []string{"no GPU utilisation series"}},
		"null result":        {body: `{"status":"success","data":{"resultType":"vector","result":null}}`, details: []string{"no GPU"}},
		"NaN":                {body: vector("NaN"), details: []string{"not a finite number"}},
		"NaN among others":   {body: vector("90", "NaN"), details: []string{"not a finite number"}},
		"+Inf":               {body: vector("+Inf"), details: []string{"not a finite number"}},
		"a histogram":        {body: `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[1764763200,{"count":"1","sum":"1"}]}]}}`, err: ErrMalformed},
		"an empty sample":    {body: `{"status":"success","data":{"resultType":"vector","result":[{}]}}`, err: ErrMalformed},
		"a null sample":      {body: `{"status":"success","data":{"resultType":"vector","result":[null]}}`, err: ErrMalformed},
		"a matrix":           {body: `{"status":"success","data":{"resultType":"matrix","result":[]}}`, err: ErrMalformed},
		"a scalar":           {body: `{"status":"success","data":{"resultType":"scalar","result":[1764763200,"50"]}}`, err: ErrMalformed},
		"no data":            {body: `{"status":"success"}`, err: ErrMalformed},
		"no result":          {body: `{"status":"success","data":{"resultType":"vector"}}`, err: ErrMalformed},
		"value not a number": {body: vector("busy"), err: ErrMalformed},
		"trailing":           {body: vector("50") + "]", err: ErrMalformed},
	})

	g := NewWithT(t)
	_, err := parse([]byte(`{"status":"error","errorType":"bad_data","error":"parse error at secret-looking text"}`), now)
	g.Expect(err).To(MatchError(ContainSubstring("error type bad_data")))
	g.Expect(err.Error()).NotTo(ContainSubstring("secret-looking"), "the error message is not repeated")
	_, err = parse([]byte(`{"status":"error","errorType":"<b>\u0007"}`), now)
	g.Expect(err).To(MatchError(ContainSubstring("error type unnamed")))
	obs, err := parsePrometheus([]byte(vector("0")), minValid.Add(time.Minute), window, 5)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(obs.Known).To(BeFalse(), "idle since before 2000 is not believed")
}

func TestReadBounded(t *testing.T) {
	g := NewWithT(t)
	body, err := readBounded(response(strings.Repeat("x", MaxBody), -1))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(body).To(HaveLen(MaxBody))
	_, err = readBounded(response(strings.Repeat("x", MaxBody+1), -1))
	g.Expect(err).To(MatchError(ErrTooLarge))
	r := response("{}", MaxBody+1)
	_, err = readBounded(r)
	g.Expect(err).To(MatchError(ContainSubstring("16385 bytes")), "refused on its Content-Length")
	g.Expect(errors.Is(err, ErrTooLarge)).To(BeTrue())
	g.Expect(r.Body.(*countingReader).read).To(BeZero(), "nothing read")
}
