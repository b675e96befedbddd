package activity

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

const (
	// DefaultGPUMetric is DCGM's GPU utilisation, in percent.
	DefaultGPUMetric = "DCGM_FI_DEV_GPU_UTIL"
	// DefaultNamespaceLabel is the label DCGM's exporter (in Kubernetes
	// mode) names the GPU's pod's namespace with; a scrape with
	// honor_labels: false (Prometheus's default) keeps it only where the
	// target has no namespace label of its own, and renames it to
	// ExportedNamespaceLabel otherwise. Without NamespaceLabel both match.
	DefaultNamespaceLabel = "namespace"
	// ExportedNamespaceLabel is DefaultNamespaceLabel renamed by a scrape
	// with honor_labels: false whose target has a namespace label.
	ExportedNamespaceLabel = "exported_namespace"
	// RatioMetricPrefix starts the names of DCGM's profiling metrics
	// (DCGM_FI_PROF_GR_ENGINE_ACTIVE, which also reads MIG devices), whose
	// values are ratios in [0, 1] rather than percent: they are scaled by 100.
	RatioMetricPrefix = "DCGM_FI_PROF_"
	// DefaultThreshold is the GPU utilisation, in percent, from which a workspace is active.
	DefaultThreshold = 5.0
	// defaultProbeTimeout bounds a probe when neither source nor Prober says otherwise.
	defaultProbeTimeout = 5 * time.Second
	// minWindow and maxWindow bound Target.Window of PrometheusGPU.
	minWindow, maxWindow = time.Minute, 31 * 24 * time.Hour
)

// Prometheus is the PrometheusGPU source: the highest GPU utilisation of
// the workspace's namespace over Target.Window, as a Prometheus holds it
// (DCGM's exporter, scraped from the child cluster). At or above Threshold
// the workspace is active now; below, it has been idle at least the window;
// with no series it is unknown (no GPU, no exporter, or not scraped).
type Prometheus struct {
	// URL is the Prometheus HTTP API's base, e.g. http://prometheus:9090.
	URL string
	// Client sends the queries; default a client without redirects.
	Client *http.Client
	// Metric is the GPU utilisation metric; default DefaultGPUMetric.
	Metric string
	// NamespaceLabel names the child namespace; when empty, a series with
	// DefaultNamespaceLabel or ExportedNamespaceLabel naming it matches,
	// which holds under either scrape setting of honor_labels.
	NamespaceLabel string
	// ClusterLabel, when set, also matches the series whose label of that
	// name is the ClusterDeployment's name, for a Prometheus that holds
	// several clusters.
	ClusterLabel string
	// Threshold is the utilisation, in percent, from which a workspace is
	// active, in (0, 100]; default DefaultThreshold.
	Threshold float64
	// Timeout bounds a query; default 5s.
	Timeout time.Duration
}

var _ Source = (*Prometheus)(nil)

// Query returns the PromQL query of a target, with every label value quoted.
func (p *Prometheus) Query(t Target) (string, error) {
	metric := p.Metric
	if metric == "" {
		metric = DefaultGPUMetric
	}
	nsLabels := []string{p.NamespaceLabel}
	if p.NamespaceLabel == "" {
		nsLabels = []string{DefaultNamespaceLabel, ExportedNamespaceLabel}
	}
	if !model.LegacyValidation.IsValidMetricName(metric) {
		return "", fmt.Errorf("metric name %q is not valid", metric)
	}
	for _, l := range append([]string{p.ClusterLabel}, nsLabels...) {
		if l != "" && !model.LegacyValidation.IsValidLabelName(l) {
			return "", fmt.Errorf("label name %q is not valid", l)
		}
	}
	if t.Namespace == "" {
		return "", errors.New("the target has no namespace")
	}
	if t.Window < minWindow || t.Window > maxWindow {
		return "", fmt.Errorf("window %s is outside [%s, %s]", t.Window, minWindow, maxWindow)
	}
	cluster := ""
	if p.ClusterLabel != "" {
		cluster = "," + p.ClusterLabel + "=" + strconv.Quote(t.Cluster.Name)
	}
	selectors := make([]string, len(nsLabels))
	for i, l := range nsLabels {
		selectors[i] = fmt.Sprintf("max_over_time(%s{%s=%s%s}[%ds])", metric, l, strconv.Quote(t.Namespace), cluster, int64(t.Window/time.Second))
	}
	query := "max(" + strings.Join(selectors, " or ") + ")"
	if strings.HasPrefix(metric, RatioMetricPrefix) {
		query = "100 * " + query
	}
	return query, nil
}

// Observe asks Prometheus for the target's GPU utilisation over its window
// up to now.
func (p *Prometheus) Observe(ctx context.Context, t Target, now time.Time) (Observation, error) {
	query, err := p.Query(t)
	if err != nil {
		return Observation{}, fmt.Errorf("prometheus: %w", err)
	}
	threshold, err := p.threshold(t.Threshold)
	if err != nil {
		return Observation{}, fmt.Errorf("prometheus: %w", err)
	}
	base, err := url.Parse(p.URL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return Observation{}, errors.New("prometheus: the URL is not an absolute http(s) URL")
	}
	u := base.JoinPath("api", "v1", "query")
	u.RawQuery = url.Values{
		"query": {query},
		"time":  {strconv.FormatFloat(float64(now.UnixMilli())/1000, 'f', 3, 64)},
	}.Encode()
	timeout := p.Timeout
	if timeout <= 0 {
		timeout = defaultProbeTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return Observation{}, fmt.Errorf("prometheus: building the query: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	hc := p.Client
	if hc == nil {
		hc = &http.Client{CheckRedirect: noRedirects}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Observation{}, fmt.Errorf("prometheus: querying: %w", transportErr(err))
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := readBounded(resp)
	if err != nil {
		return Observation{}, fmt.Errorf("prometheus: %w", err)
	}
	obs, err := parsePrometheus(body, now, t.Window, threshold)
	if resp.StatusCode != http.StatusOK {
		// Prometheus answers errors with 4xx/5xx and a JSON body saying why.
		if err == nil || len(body) == 0 {
			return Observation{}, fmt.Errorf("prometheus: HTTP %d", resp.StatusCode)
		}
		return Observation{}, fmt.Errorf("prometheus: HTTP %d: %w", resp.StatusCode, err)
	}
	return obs, err
}

// threshold returns the target's threshold (its class's), else Threshold,
// else DefaultThreshold; outside (0, 100] it is an error rather than a
// workspace always idle or always active.
func (p *Prometheus) threshold(own float64) (float64, error) {
	v := own
	if v == 0 {
		v = p.Threshold
	}
	switch {
	case v == 0:
		return DefaultThreshold, nil
	case v > 0 && v <= 100:
		return v, nil
	}
	return 0, fmt.Errorf("threshold %g%% is outside (0, 100]", v)
}

// promResponse is the envelope of the Prometheus HTTP API.
type promResponse struct {
	Status    string `json:"status"`
	ErrorType string `json:"errorType"`
	Data      *struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	} `json:"data"`
}

// errorTypeRE matches the error types of the Prometheus API (bad_data,
// timeout, ...), the only part of an error answer a detail repeats.
var errorTypeRE = regexp.MustCompile(`^[a-z_]{1,32}$`)

// parsePrometheus reads the answer to Query: an instant vector of at most
// one sample, the highest utilisation over the window up to now. Sample
// values are decoded by prometheus/common/model.
func parsePrometheus(body []byte, now time.Time, window time.Duration, threshold float64) (Observation, error) {
	var r promResponse
	if err := decodeJSON(body, &r); err != nil {
		return Observation{}, fmt.Errorf("prometheus answer: %w", err)
	}
	if r.Status != "success" {
		kind := "unnamed"
		if errorTypeRE.MatchString(r.ErrorType) {
			kind = r.ErrorType
		}
		return Observation{}, fmt.Errorf("prometheus answer: query failed: error type %s", kind)
	}
	if r.Data == nil || r.Data.ResultType != model.ValVector.String() {
		return Observation{}, fmt.Errorf("prometheus answer: %w: not an instant vector", ErrMalformed)
	}
	// Each sample of the vector holds its value as a model.SamplePair; a
	// sample without one (a native histogram, or nothing) is refused rather
	// than read as 0%.
	var v []*struct {
		Value *model.SamplePair `json:"value"`
	}
	if err := decodeJSON(r.Data.Result, &v); err != nil {
		return Observation{}, fmt.Errorf("prometheus answer: %w", err)
	}
	if len(v) == 0 {
		return Observation{Detail: "no GPU utilisation series over the window"}, nil
	}
	highest := math.Inf(-1)
	for _, s := range v {
		if s == nil || s.Value == nil {
			return Observation{}, fmt.Errorf("prometheus answer: %w: a sample without a value", ErrMalformed)
		}
		highest = max(highest, float64(s.Value.Value))
	}
	if math.IsNaN(highest) || math.IsInf(highest, 0) {
		return Observation{Detail: "GPU utilisation is not a finite number"}, nil
	}
	over := fmt.Sprintf("over %s (threshold %g%%)", model.Duration(window), threshold)
	if highest >= threshold {
		return Observation{LastActivity: now, Known: true, Detail: fmt.Sprintf("GPU utilisation up to %.4g%% %s", highest, over)}, nil
	}
	return at(now.Add(-window), now, fmt.Sprintf("GPU utilisation at most %.4g%% %s", highest, over)), nil
}
