package values

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"

	"helm.sh/helm/v3/pkg/strvals"

	"github.com/apiaryhq/apiary/internal/yamlbound"
)

// MergeValues overlays the deployment's values on the class's defaultValues.
//
// The merge is shallow, at the top level only, as in the exalsius operator:
// a top-level key of user replaces the class's value for that key entirely
// (user {"a": {"x": 1}} over class {"a": {"y": 2}} gives {"a": {"x": 1}}).
// The semantic is kept on purpose, so that a workspace renders the same
// values under both controllers. The result is a deep copy, never nil, and
// shares nothing with the inputs, which are not modified.
func MergeValues(classDefaults, user map[string]any) map[string]any {
	out := make(map[string]any, len(classDefaults)+len(user))
	for k, v := range classDefaults {
		out[k] = deepCopy(v)
	}
	for k, v := range user {
		out[k] = deepCopy(v)
	}
	return out
}

// DeepMerge overlays overlay on base recursively, with the semantics of
// Flux's transform.MergeMaps: where both hold a map under the same key the
// maps are merged, anything else in overlay (a list, a scalar, null)
// replaces base's value. The result is a deep copy, never nil; the inputs
// are not modified.
func DeepMerge(base, overlay map[string]any) map[string]any {
	out := deepCopyMap(base)
	if out == nil {
		out = map[string]any{}
	}
	mergeInto(out, overlay)
	return out
}

// mergeInto merges a copy of overlay into dst.
func mergeInto(dst, overlay map[string]any) {
	for k, v := range overlay {
		if src, ok := v.(map[string]any); ok {
			if d, ok := dst[k].(map[string]any); ok {
				mergeInto(d, src)
				continue
			}
		}
		dst[k] = deepCopy(v)
	}
}

// targetPathPattern is the syntax Flux admits for valuesFrom targetPath:
// Helm --set keys with escaped dots and list indexes.
var targetPathPattern = regexp.MustCompile(`^([a-zA-Z0-9_\-.\\/]|\[[0-9]{1,5}\])+$`)

// MergeFrom applies the content of one valuesFrom key to values, with the
// semantics of a Flux HelmRelease valuesFrom entry:
//   - without targetPath, content is a YAML (or JSON) document whose map is
//     deep-merged over values (see DeepMerge; content wins); empty content
//     changes nothing;
//   - with targetPath, the raw content is set at targetPath as Helm's
//     --set does (Flux uses Helm's strvals): targetPath uses Helm's syntax
//     (a.b\.c, list[0]), not ParsePath's; unquoted content is typed
//     (true, false, null, integers), content starting and ending with a quote
//     is set as a string, without the quotes at either end.
//
// It returns a new map; values is not modified. Errors never quote the
// content, which may come from a Secret. The content is bounded as one
// source of a fresh Budget (MergeFromBudget).
func MergeFrom(values map[string]any, content []byte, targetPath string) (map[string]any, error) {
	return MergeFromBudget(values, content, targetPath, NewBudget())
}

// MergeFromBudget is MergeFrom within budget: content above
// MaxSourceBytes or the bytes left, or a document that would expand beyond
// MaxExpandedBytes or what is left, is refused with an error wrapping
// ErrTooLarge before it is decoded.
func MergeFromBudget(values map[string]any, content []byte, targetPath string, budget *Budget) (map[string]any, error) {
	if targetPath == "" {
		doc, err := budget.decode(content)
		if err != nil {
			return nil, err
		}
		return DeepMerge(values, doc), nil
	}
	if err := budget.charge(int64(len(content))); err != nil {
		return nil, err
	}
	if !targetPathPattern.MatchString(targetPath) {
		return nil, fmt.Errorf("targetPath %q: only letters, digits, '_', '-', '.', '/', '\\' and [index] are allowed", targetPath)
	}
	out := deepCopyMap(values)
	if out == nil {
		out = map[string]any{}
	}
	raw := string(content)
	set := strvals.ParseInto
	if strings.HasPrefix(raw, `"`) && strings.HasSuffix(raw, `"`) ||
		strings.HasPrefix(raw, "'") && strings.HasSuffix(raw, "'") {
		// Like Flux: strip every quote at either end.
		raw, set = strings.Trim(raw, `"'`), strvals.ParseIntoString
	}
	if err := set(targetPath+"="+raw, out); err != nil {
		// strvals' message may quote part of the content: leave it out.
		return nil, fmt.Errorf("targetPath %q: the content cannot be set there as a Helm --set value", targetPath)
	}
	return out, nil
}

// Equivalent reports whether two values documents of a ServiceSet service
// (JSON or YAML) mean the same values: equal after parsing, with an empty
// document, null and {} alike. A document that does not parse, or that
// holds the template delimiter {{, is equivalent only to the same text:
// Sveltos runs such a document as a template before parsing it.
func Equivalent(a, b string) bool {
	if a == b {
		return true
	}
	if strings.Contains(a, "{{") || strings.Contains(b, "{{") {
		return false
	}
	va, errA := parseDocument(a)
	vb, errB := parseDocument(b)
	if errA != nil || errB != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func parseDocument(s string) (map[string]any, error) {
	out := map[string]any{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	var v map[string]any
	if err := yamlbound.Unmarshal([]byte(s), &v, MaxExpandedBytes); err != nil {
		return nil, err
	}
	for k, val := range v {
		out[k] = val
	}
	return out, nil
}

// deepCopy copies the maps and lists of a values tree; other values are
// returned as they are (JSON scalars are immutable).
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return deepCopyMap(t)
	case []any:
		if t == nil {
			return t
		}
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = deepCopy(e)
		}
		return out
	case map[string]string:
		if t == nil {
			return t
		}
		out := make(map[string]string, len(t))
		for k, e := range t {
			out[k] = e
		}
		return out
	case []string:
		if t == nil {
			return t
		}
		return append([]string(nil), t...)
	default:
		return v
	}
}

// deepCopyMap copies a values map; nil stays nil.
func deepCopyMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = deepCopy(v)
	}
	return out
}
