// Package docs_test checks that the documentation names only what exists:
// the manager's flags, make targets, metrics, condition reasons and the
// repository's files.
package docs_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// docFiles are the documents checked, relative to the root.
func docFiles(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := []string{"README.md", "charts/apiary/README.md", "gitops-examples/README.md"}
	for _, d := range docs {
		rel, err := filepath.Rel(root, d)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, filepath.ToSlash(rel))
	}
	sort.Strings(out)
	return out
}

// TestDocsNameWhatExists fails for each flag, make target, metric, condition
// reason or repository path a document names that the code does not have.
func TestDocsNameWhatExists(t *testing.T) {
	k := known{
		flags: knownFlags(t), targets: knownTargets(t), metrics: knownMetrics(t), reasons: knownReasons(t),
		root: root,
	}
	for _, doc := range docFiles(t) {
		t.Run(doc, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(root, doc))
			NewWithT(t).Expect(err).NotTo(HaveOccurred())
			problems := k.check(doc, string(data))
			NewWithT(t).Expect(problems).To(BeEmpty(), "%s names what does not exist:\n%s", doc, strings.Join(problems, "\n"))
		})
	}
}

// TestCheckCatchesEachKind plants one wrong name of each kind in a document
// and expects each to be reported, and the right ones not.
func TestCheckCatchesEachKind(t *testing.T) {
	g := NewWithT(t)
	k := known{
		flags: knownFlags(t), targets: knownTargets(t), metrics: knownMetrics(t), reasons: knownReasons(t),
		root: root,
	}
	doc := "Run with `--leader-elect` and `--no-such-flag`; `make manifests` and `make no-such-target`.\n" +
		"Watch `apiary_build_info`, `apiary_reconcile_duration_seconds_bucket` and apiary_no_such_metric.\n" +
		"It waits with reason `WaitingForGpuCapacity`, or `ValuesFromNotFound`, never the reason `NoSuchReason`;\n" +
		"then `Failed` (`ClassNotFound`, `NoSuchFailure`).\n" +
		"`GPUCapacityAvailable=False/NoSuchReasonEither`. See `internal/admission/admission.go`, `internal/no/such.go`,\n" +
		"[the API](api.md) and [nothing](no-such.md#x).\n\n```sh\nbin/apiary render --bundle-dir x --no-such-render-flag\nmake verify nope-target\n```\n"
	problems := k.check("docs/planted.md", doc)
	g.Expect(problems).To(ConsistOf(
		ContainSubstring("--no-such-flag"),
		ContainSubstring("make no-such-target"),
		ContainSubstring("apiary_no_such_metric"),
		ContainSubstring("NoSuchReason"),
		ContainSubstring("NoSuchReasonEither"),
		ContainSubstring("NoSuchFailure"),
		ContainSubstring("internal/no/such.go"),
		ContainSubstring("no-such.md"),
		ContainSubstring("--no-such-render-flag"),
		ContainSubstring("make nope-target"),
	))
}

// known is what exists.
type known struct {
	flags, targets, metrics, reasons map[string]bool
	root                             string
}

var (
	inlineCode   = regexp.MustCompile("`([^`]+)`")
	flagSpan     = regexp.MustCompile(`^--([a-z0-9][a-z0-9-]*)(=.*)?$`)
	flagToken    = regexp.MustCompile(`(?:^|\s)--([a-z0-9][a-z0-9-]*)`)
	metricName   = regexp.MustCompile(`\bapiary_[a-z0-9_]+`)
	conditionSet = regexp.MustCompile(`(?:\b([A-Z][A-Za-z]+)=)?\b(True|False|Unknown)/([A-Z][A-Za-z]+)`)
	camelWord    = regexp.MustCompile(`^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+$`)
	mdLink       = regexp.MustCompile(`\]\(([A-Za-z0-9_./#-]+)\)`)
	repoPath     = regexp.MustCompile(`^(?:\./)?([A-Za-z0-9_.-]+(?:/[A-Za-z0-9_.-]+)*/?)$`)
	reasonWord   = regexp.MustCompile(`(?i)\breasons?\b`)
	afterPhase   = regexp.MustCompile("`([A-Z][A-Za-z]+)` \\((?:`[^`]*`(?:, | or |/))*$")
	goIdent      = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// check returns one line per name in text that does not exist.
func (k known) check(doc, text string) []string {
	var problems []string
	report := func(line int, format string, args ...any) {
		problems = append(problems, fmt.Sprintf("%s:%d: %s", doc, line, fmt.Sprintf(format, args...)))
	}
	lines := strings.Split(text, "\n")
	fenced := false
	prev := ""
	for i, line := range lines {
		n := i + 1
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		for _, m := range metricName.FindAllString(line, -1) {
			if !k.metric(m) {
				report(n, "metric %s", m)
			}
		}
		if fenced {
			k.checkCommand(line, func(f string, a ...any) { report(n, f, a...) })
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
			if p, ok := k.link(doc, m[1]); !ok {
				report(n, "link to %s", p)
			}
		}
		for _, loc := range inlineCode.FindAllStringSubmatchIndex(line, -1) {
			span := line[loc[2]:loc[3]]
			before := prev + " " + line[:loc[0]]
			k.checkSpan(doc, span, before, func(f string, a ...any) { report(n, f, a...) })
		}
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "|") {
			prev = ""
		} else {
			prev = line
		}
	}
	return problems
}

func (k known) checkSpan(doc, span, before string, report func(string, ...any)) {
	if m := flagSpan.FindStringSubmatch(span); m != nil {
		if !k.flags[m[1]] && foreignFlags[m[1]] == "" {
			report("flag --%s", m[1])
		}
		return
	}
	k.checkCommand(span, report)
	for _, m := range conditionSet.FindAllStringSubmatch(span, -1) {
		if m[1] != "" && !k.reasons[m[1]] && foreignReasons[m[1]] == "" {
			report("condition %s", m[1])
		}
		if !k.reasons[m[3]] && foreignReasons[m[3]] == "" {
			report("reason %s", m[3])
		}
	}
	if camelWord.MatchString(span) && k.inReasonContext(before) && !k.reasons[span] && foreignReasons[span] == "" {
		report("reason %s", span)
	}
	if m := repoPath.FindStringSubmatch(span); m != nil && strings.Contains(m[1], "/") && !strings.Contains(m[1], "...") {
		top := strings.SplitN(m[1], "/", 2)[0]
		if repoTops[top] && foreignPaths[m[1]] == "" && !k.exists(m[1]) && !k.goName(m[1]) && !k.inBundle(top, m[1]) {
			report("file %s", m[1])
		}
	}
}

// inReasonContext says the text just before a span speaks of a reason, or
// the span is in parentheses after a phase: `Failed` (`ClassNotFound`).
func (k known) inReasonContext(before string) bool {
	if m := afterPhase.FindStringSubmatch(before); m != nil && k.reasons[m[1]] {
		return true
	}
	if len(before) > 60 {
		before = before[len(before)-60:]
	}
	return reasonWord.MatchString(before)
}

var (
	makeCall     = regexp.MustCompile(`(?:^|[\s;&(|$])make\s+(.*)$`)
	apiaryCall   = regexp.MustCompile(`^(?:\$\s+)?(?:[A-Z_]+=\S+\s+)*(?:\./)?(?:bin/apiary|apiary|/manager|go run \.)(?:\s|$)`)
	targetToken  = regexp.MustCompile(`^[a-z][a-z0-9_.-]*$`)
	shellBreaker = regexp.MustCompile(`^(&&|\|\||;|\||#|\)|>.*|2>.*)$`)
)

// checkCommand checks the make targets and apiary flags of a command line.
func (k known) checkCommand(line string, report func(string, ...any)) {
	trimmed := strings.TrimSpace(line)
	if m := makeCall.FindStringSubmatch(trimmed); m != nil {
		for _, tok := range strings.Fields(m[1]) {
			if shellBreaker.MatchString(tok) {
				break
			}
			if strings.HasPrefix(tok, "-") || strings.Contains(tok, "=") || !targetToken.MatchString(tok) {
				continue
			}
			if !k.targets[tok] {
				report("make %s", tok)
			}
		}
	}
	if apiaryCall.MatchString(trimmed) {
		for _, m := range flagToken.FindAllStringSubmatch(trimmed, -1) {
			if !k.flags[m[1]] {
				report("flag --%s", m[1])
			}
		}
	}
}

func (k known) metric(name string) bool {
	if k.metrics[name] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && k.metrics[base] {
			return true
		}
	}
	if strings.HasSuffix(name, "_") {
		for m := range k.metrics {
			if strings.HasPrefix(m, name) {
				return true
			}
		}
	}
	return false
}

// link resolves a relative link of doc; web links and anchors pass.
func (k known) link(doc, target string) (string, bool) {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
		return target, true
	}
	target, _, _ = strings.Cut(target, "#")
	p := filepath.ToSlash(filepath.Join(filepath.Dir(doc), target))
	return p, k.exists(p)
}

// goName says p is a Go name qualified by its package's folder, such as
// api/common/v1.ReadyCondition.
func (k known) goName(p string) bool {
	dir, name := p[:strings.LastIndex(p, "/")+1], p[strings.LastIndex(p, "/")+1:]
	pkg, ident, ok := strings.Cut(name, ".")
	return ok && goIdent.MatchString(ident) && k.exists(dir+pkg)
}

// inBundle says a templates/ path is a file of a built-in bundle, as a
// bundle's own paths are written (templates/<file> in templates/<bundle>/).
func (k known) inBundle(top, p string) bool {
	if top != "templates" {
		return false
	}
	matches, _ := filepath.Glob(filepath.Join(k.root, "templates", "*", filepath.FromSlash(p)))
	return len(matches) > 0
}

func (k known) exists(rel string) bool {
	_, err := os.Stat(filepath.Join(k.root, filepath.FromSlash(rel)))
	return err == nil
}
