// Package enginetest holds what the tests of the template engine and of the
// renderer above it share: the runaway templates a hostile bundle author
// would write, which every fuzz target of a render starts from.
package enginetest

// RunawayTemplates try to exceed each bound of a render: unbounded loops,
// self-referencing maps, exponential growth, recursive includes and tpl,
// and functions that copy or walk everything they are given.
var RunawayTemplates = []string{
	`{{ range $i := until 100000000 }}x{{ end }}`,
	`{{ range $i := 100000000000 }}{{ end }}`,
	`{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ $d }}`,
	`{{ $m := dict }}{{ range $i := 64 }}{{ $m = dict "a" $m "b" $m }}{{ end }}{{ $m }}`,
	`{{ define "r" }}{{ include "r" . }}{{ end }}{{ include "r" . }}`,
	`{{ tpl .Values.t . }}`,
	`{{ $s := "xx" }}{{ range $i := 100 }}{{ $s = printf "%s%s" $s $s }}{{ end }}`,
	`{{ toYaml . }}{{ .Files.Glob "**" }}{{ deepCopy .Values | toJson }}`,
}
