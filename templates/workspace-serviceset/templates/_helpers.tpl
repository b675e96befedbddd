{{- /*
workspace-serviceset.labelValue bounds a name to a valid label value (63
characters) the way the controller does (naming.Bounded): a longer name
becomes its first 54 characters, trimmed of trailing '-' and '.', then '-'
and the first eight hex characters of its SHA-256.
*/ -}}
{{- define "workspace-serviceset.labelValue" -}}
{{- $n := toString . -}}
{{- if le (len $n) 63 -}}
{{- $n -}}
{{- else -}}
{{- printf "%s-%s" (regexReplaceAll "[-.]+$" (trunc 54 $n) "") (trunc 8 (sha256sum $n)) -}}
{{- end -}}
{{- end -}}
