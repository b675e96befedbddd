{{- /*
colony-cluster.labelValue bounds a name to a valid label value (63
characters) the way the controller does: a longer name becomes its first 54
characters, trimmed of trailing '-' and '.', then '-' and the first eight hex
characters of its SHA-256.
*/ -}}
{{- define "colony-cluster.labelValue" -}}
{{- $n := toString . -}}
{{- if le (len $n) 63 -}}
{{- $n -}}
{{- else -}}
{{- printf "%s-%s" (regexReplaceAll "[-.]+$" (trunc 54 $n) "") (trunc 8 (sha256sum $n)) -}}
{{- end -}}
{{- end -}}

{{- /*
colony-cluster.labels returns the labels of the ClusterDeployment as YAML:
the entry's clusterLabels plus the Colony label and the managed-by label,
which win over clusterLabels.
*/ -}}
{{- define "colony-cluster.labels" -}}
{{- $cluster := .Input.cluster | default (dict) -}}
{{- $fixed := dict "infra.exalsius.ai/colony" (include "colony-cluster.labelValue" .Input.colony.name) "app.kubernetes.io/managed-by" "apiary" -}}
{{- toYaml (merge $fixed ($cluster.clusterLabels | default (dict))) -}}
{{- end -}}
