package engine

import (
	"errors"
	"math"
	"reflect"
	"strings"

	"github.com/apiaryhq/apiary/internal/yamlbound"
)

// extraBytes estimates, for the functions whose result can be much larger
// than their arguments, the bytes one call allocates beyond the arguments'
// expanded size (pre). The call is refused before it runs when that does
// not fit in the work left: a single call must not allocate gigabytes.
var extraBytes = map[string]func(args []reflect.Value, pre int64) int64{
	"repeat":                     func(a []reflect.Value, _ int64) int64 { return mulSat(intArg(a, 0), strArgLen(a, 1)) },
	"until":                      func(a []reflect.Value, _ int64) int64 { n := intArg(a, 0); return 8 * rangeLen(0, n, sign(n)) },
	"untilStep":                  func(a []reflect.Value, _ int64) int64 { return 8 * rangeLen(intArg(a, 0), intArg(a, 1), intArg(a, 2)) },
	"seq":                        seqBytes,
	"indent":                     indentBytes,
	"nindent":                    indentBytes,
	"replace":                    replaceBytes,
	"regexReplaceAll":            regexReplaceBytes,
	"mustRegexReplaceAll":        regexReplaceBytes,
	"regexReplaceAllLiteral":     regexReplaceBytes,
	"mustRegexReplaceAllLiteral": regexReplaceBytes,
	"wrapWith":                   wrapWithBytes,
	"printf":                     func(a []reflect.Value, _ int64) int64 { return printfWidths(strArg(a, 0)) },
	"join":                       func(a []reflect.Value, _ int64) int64 { return mulSat(int64(shallowLen(a[1])), strArgLen(a, 0)) },
	"split":                      splitBytes(1),
	"splitList":                  splitBytes(1),
	"splitn":                     splitBytes(2),
	"regexSplit":                 splitBytes(1),
	"mustRegexSplit":             splitBytes(1),
	"regexFindAll":               splitBytes(1),
	"mustRegexFindAll":           splitBytes(1),
	"html":                       func(_ []reflect.Value, pre int64) int64 { return mulSat(pre, 5) },
	"js":                         func(_ []reflect.Value, pre int64) int64 { return mulSat(pre, 5) },
	"urlquery":                   func(_ []reflect.Value, pre int64) int64 { return mulSat(pre, 2) },
	"b64enc":                     func(_ []reflect.Value, pre int64) int64 { return pre/2 + 4 },
	"b32enc":                     func(_ []reflect.Value, pre int64) int64 { return pre + 8 },
	"fromYaml":                   decodedYAMLBytes,
	"fromYamlArray":              decodedYAMLBytes,
	"fromJson":                   decodedTextBytes("[{,:"),
	"fromJsonArray":              decodedTextBytes("[{,:"),
	"fromToml":                   decodedTextBytes("[{,=\n"),
}

// decodedYAMLBytes estimates what decoding a YAML document allocates: the
// JSON it expands to with every alias copied, and 16 bytes per value, as
// the result is charged (yamlbound.Measure, linear in the text whatever
// the aliases). A document that does not parse decodes to an error.
func decodedYAMLBytes(a []reflect.Value, _ int64) int64 {
	size, n, err := yamlbound.Measure([]byte(strArg(a, 0)), math.MaxInt64)
	if errors.Is(err, yamlbound.ErrInvalid) {
		return 0
	}
	return addSat(size, mulSat(n, 16))
}

// decodedTextBytes estimates what decoding JSON or TOML allocates (neither
// has aliases): the text, and 16 bytes per value, counted by the
// characters that can start one.
func decodedTextBytes(starts string) func(a []reflect.Value, _ int64) int64 {
	return func(a []reflect.Value, _ int64) int64 {
		s := strArg(a, 0)
		var n int64
		for _, c := range starts {
			n += int64(strings.Count(s, string(c)))
		}
		return addSat(int64(len(s)), mulSat(n+1, 16))
	}
}

// extraSteps estimates the steps of functions that compare every pair of a
// list's elements.
var extraSteps = map[string]func(args []reflect.Value) int64{
	"uniq":     quadraticSteps,
	"mustUniq": quadraticSteps,
}

func quadraticSteps(a []reflect.Value) int64 {
	n := int64(shallowLen(a[0]))
	return mulSat(n, n) / 64
}

func intArg(a []reflect.Value, i int) int64 {
	if i >= len(a) {
		return 0
	}
	v := indirect(a[i])
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if v.Uint() > math.MaxInt64 {
			return math.MaxInt64
		}
		return int64(v.Uint())
	}
	return 0
}

func strArg(a []reflect.Value, i int) string {
	if i >= len(a) {
		return ""
	}
	if v := indirect(a[i]); v.Kind() == reflect.String {
		return v.String()
	}
	return ""
}

func strArgLen(a []reflect.Value, i int) int64 { return int64(len(strArg(a, i))) }

// mulSat multiplies without overflowing; negative factors give 0.
// addSat is a+b for non-negative a and b, math.MaxInt64 when it overflows.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func mulSat(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

func sign(n int64) int64 {
	if n < 0 {
		return -1
	}
	return 1
}

// rangeLen is the length of sprig's untilStep(start, stop, step).
func rangeLen(start, stop, step int64) int64 {
	span := float64(stop) - float64(start)
	switch {
	case span > 0 && step > 0:
		return int64(math.Min(math.Ceil(span/float64(step)), math.MaxInt64/16))
	case span < 0 && step < 0:
		return int64(math.Min(math.Ceil(span/float64(step)), math.MaxInt64/16))
	}
	return 0
}

// seqBytes bounds seq's output: at most one number of 20 digits and a
// space for each of the largest range its arguments can describe.
func seqBytes(a []reflect.Value, _ int64) int64 {
	if len(a) == 0 {
		return 0
	}
	params := a[len(a)-1]
	var lo, hi int64
	for i := 0; i < params.Len(); i++ {
		n := intArg([]reflect.Value{params.Index(i)}, 0)
		lo, hi = min(lo, n), max(hi, n)
	}
	return mulSat(21, rangeLen(lo, hi, 1)+1)
}

func indentBytes(a []reflect.Value, _ int64) int64 {
	s := strArg(a, 1)
	return mulSat(intArg(a, 0), int64(strings.Count(s, "\n"))+1) + 1
}

func replaceBytes(a []reflect.Value, _ int64) int64 {
	old, src := strArg(a, 0), strArg(a, 2)
	return mulSat(int64(strings.Count(src, old)), strArgLen(a, 1))
}

// regexReplaceBytes bounds a replacement that may match at every position
// and expand the whole input into each match ($1, ${1}).
func regexReplaceBytes(a []reflect.Value, _ int64) int64 {
	return mulSat(2*(strArgLen(a, 1)+1), strArgLen(a, 2)+1)
}

func wrapWithBytes(a []reflect.Value, _ int64) int64 {
	width := max(intArg(a, 0), 1)
	return mulSat(strArgLen(a, 2)/width+1, strArgLen(a, 1))
}

// splitBytes bounds a split of argument i into as many strings as it has
// bytes.
func splitBytes(i int) func([]reflect.Value, int64) int64 {
	return func(a []reflect.Value, _ int64) int64 { return mulSat(24, strArgLen(a, i)+1) }
}

// printfWidths sums the widths and precisions of a format's verbs: fmt pads
// each up to 1,000,000 bytes ("*" takes it from an argument).
func printfWidths(format string) int64 {
	const maxWidth = 1_000_000
	var total int64
	for i := 0; i < len(format); i++ {
		if format[i] != '%' {
			continue
		}
		var widest, n int64
		for i++; i < len(format) && strings.IndexByte("+-# 0123456789.*[]", format[i]) >= 0; i++ {
			switch c := format[i]; {
			case c >= '0' && c <= '9':
				n = min(n*10+int64(c-'0'), maxWidth)
				widest = max(widest, n)
			case c == '*':
				widest = maxWidth
			default:
				n = 0
			}
		}
		total += widest
	}
	return total
}
