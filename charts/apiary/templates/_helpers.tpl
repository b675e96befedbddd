{{/* The chart name, truncated to a valid label. */}}
{{- define "apiary.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The prefix of every object name: the release name, with the chart name unless it already holds it. */}}
{{- define "apiary.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* The chart label. */}}
{{- define "apiary.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of the manager's objects. */}}
{{- define "apiary.labels" -}}
{{ include "apiary.commonLabels" . }}
app.kubernetes.io/component: manager
{{- end }}

{{/* Labels of the ClusterRoles for tenants: not the manager's component. */}}
{{- define "apiary.tenantLabels" -}}
{{ include "apiary.commonLabels" . }}
app.kubernetes.io/component: tenant-access
{{- end }}

{{/* Labels of every object of the chart but their component. */}}
{{- define "apiary.commonLabels" -}}
helm.sh/chart: {{ include "apiary.chart" . }}
{{ include "apiary.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels that select the manager pods. */}}
{{- define "apiary.selectorLabels" -}}
app.kubernetes.io/name: {{ include "apiary.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The ServiceAccount the manager runs as. */}}
{{- define "apiary.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "apiary.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The manager image, tagged with the appVersion unless image.tag is set. */}}
{{- define "apiary.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* "true" when the env list (dict "env" list "name" string) sets the variable name, else empty. */}}
{{- define "apiary.extraEnvHas" -}}
{{- range .env }}
{{- if eq (toString .name) $.name }}true{{- end }}
{{- end }}
{{- end }}
