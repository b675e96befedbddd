{{/*
The manager Deployment. The context is the chart's (Values, Release, Chart)
plus Sharded, Shard and Shards: deployment.yaml renders it once without
sharding, or once per shard.
*/}}
{{- define "apiary.deployment" -}}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "apiary.fullname" . }}{{ if .Sharded }}-shard-{{ .Shard }}{{ end }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "apiary.labels" . | nindent 4 }}
    {{- if .Sharded }}
    apiary.exalsius.ai/shard: {{ .Shard | quote }}
    {{- end }}
spec:
  replicas: {{ .Values.replicaCount }}
  selector:
    matchLabels:
      {{- include "apiary.selectorLabels" . | nindent 6 }}
      {{- if .Sharded }}
      apiary.exalsius.ai/shard: {{ .Shard | quote }}
      {{- end }}
  template:
    metadata:
      annotations:
        kubectl.kubernetes.io/default-container: manager
        {{- with .Values.podAnnotations }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      labels:
        {{- include "apiary.labels" . | nindent 8 }}
        {{- if .Sharded }}
        apiary.exalsius.ai/shard: {{ .Shard | quote }}
        {{- end }}
        {{- with .Values.podLabels }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
    spec:
      serviceAccountName: {{ include "apiary.serviceAccountName" . }}
      automountServiceAccountToken: true
      {{- with .Values.imagePullSecrets }}
      imagePullSecrets:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.priorityClassName }}
      priorityClassName: {{ . }}
      {{- end }}
      securityContext:
        {{- toYaml .Values.podSecurityContext | nindent 8 }}
      terminationGracePeriodSeconds: 30
      containers:
        - name: manager
          image: {{ include "apiary.image" . | quote }}
          imagePullPolicy: {{ .Values.image.pullPolicy }}
          args:
            {{- if .Sharded }}
            # Each shard holds its own Lease, apiary-shard-<index>.
            - --leader-elect=true
            - --leader-election-namespace={{ .Release.Namespace }}
            - --shards={{ .Shards }}
            - --shard={{ .Shard }}
            {{- else }}
            - --leader-elect={{ .Values.leaderElection.enabled }}
            {{- if .Values.leaderElection.enabled }}
            - --leader-election-id={{ .Values.leaderElection.id }}
            - --leader-election-namespace={{ .Release.Namespace }}
            {{- end }}
            {{- end }}
            {{- if .Values.metrics.enabled }}
            - --metrics-bind-address=:{{ .Values.metrics.port }}
            {{- if .Values.metrics.secure }}
            - --metrics-secure
            {{- end }}
            {{- else }}
            - --metrics-bind-address=0
            {{- end }}
            {{- if .Values.queuePositions.enabled }}
            - --queue-bind-address=:{{ .Values.queuePositions.port }}
            {{- end }}
            - --health-probe-bind-address=:{{ .Values.health.port }}
            - --colony-concurrency={{ .Values.concurrency.colony }}
            - --workspaceclass-concurrency={{ .Values.concurrency.workspaceClass }}
            - --workspacedeployment-concurrency={{ .Values.concurrency.workspaceDeployment }}
            - --tenantquota-concurrency={{ .Values.concurrency.tenantQuota }}
            - --gpu-queueing-policy={{ .Values.gpuAdmission.queueingPolicy }}
            - --preemption-requeue={{ .Values.gpuAdmission.preemptionRequeue }}
            - --no-cross-namespace-refs={{ .Values.noCrossNamespaceRefs }}
            {{- with .Values.gpuInventoryInterval }}
            - --gpu-inventory-interval={{ . }}
            {{- end }}
            - --child-server-https-only={{ .Values.childClusters.httpsOnly }}
            {{- with .Values.childClusters.allowedServers }}
            - --child-server-allow={{ join "," . }}
            {{- end }}
            {{- with .Values.activity.prometheusURL }}
            - --activity-prometheus-url={{ . }}
            {{- end }}
            {{- with .Values.activity.prometheusMetric }}
            - --activity-prometheus-metric={{ . }}
            {{- end }}
            {{- with .Values.activity.prometheusNamespaceLabel }}
            - --activity-prometheus-namespace-label={{ . }}
            {{- end }}
            - --activity-probe-concurrency={{ .Values.activity.probeConcurrency }}
            - --activity-probe-timeout={{ .Values.activity.probeTimeout }}
            {{- with .Values.valuesFrom.serviceAccount }}
            - --values-from-service-account={{ . }}
            {{- end }}
            {{- with .Values.prerequisiteGracePeriod }}
            - --prerequisite-grace-period={{ . }}
            {{- end }}
            - --adopt-field-managers={{ join "," .Values.adoption.fieldManagers }}
            {{- with .Values.crdCheckInterval }}
            - --crd-check-interval={{ . }}
            {{- end }}
            {{- with .Values.bundles.dir }}
            - --bundle-dir={{ . }}
            {{- end }}
            - --workspace-gateway-name={{ .Values.workspaceAccess.gateway.name }}
            - --workspace-gateway-namespace={{ .Values.workspaceAccess.gateway.namespace }}
            - --workspace-mesh-mode={{ .Values.workspaceAccess.mesh.mode }}
            - --workspace-waypoint-enabled={{ .Values.workspaceAccess.mesh.waypoints.enabled }}
            - --workspace-waypoint-namespace={{ .Values.workspaceAccess.mesh.waypoints.namespace }}
            - --delivery={{ .Values.delivery.mode }}
            {{- if .Values.delivery.tenantGit }}
            - --tenant-git=true
            {{- end }}
            {{- if or (eq .Values.delivery.mode "git") .Values.delivery.tenantGit }}
            {{- with .Values.delivery.git }}
            {{- with .url }}
            - --git-url={{ . }}
            {{- end }}
            {{- with .branch }}
            - --git-branch={{ . }}
            {{- end }}
            - --git-path={{ .path }}
            {{- with .routesPath }}
            - --git-routes-path={{ . }}
            {{- end }}
            {{- with .secretRef }}
            - --git-secret={{ . }}
            {{- end }}
            {{- with .gitRepositoryRef }}
            - --git-repository={{ . }}
            {{- end }}
            {{- with .kustomizationRef }}
            - --git-kustomization={{ . }}
            {{- end }}
            {{- with .signingKeySecretRef }}
            - --git-signing-key-secret={{ . }}
            {{- end }}
            - --git-author-name={{ .author.name }}
            - --git-author-email={{ .author.email }}
            {{- with .commitMessage }}
            - --git-commit-message={{ . }}
            {{- end }}
            {{- with .commitWindow }}
            - --git-commit-window={{ . }}
            {{- end }}
            - --git-checkout-dir=/var/lib/apiary/git
            {{- with .sops.ageRecipients }}
            - --sops-age-recipients={{ join "," . }}
            {{- end }}
            {{- end }}
            {{- end }}
            - --zap-log-level={{ .Values.log.level }}
            - --zap-encoder={{ .Values.log.encoding }}
            {{- range .Values.extraArgs }}
            - {{ . | quote }}
            {{- end }}
          env:
            # The manager's namespace: Git delivery keeps the salt of its
            # SOPS plaintext digests in a Secret there.
            - name: POD_NAMESPACE
              valueFrom:
                fieldRef:
                  fieldPath: metadata.namespace
            {{- if and .Values.goMemLimitFromContainer (dig "limits" "memory" "" .Values.resources) (not (include "apiary.extraEnvHas" (dict "env" .Values.extraEnv "name" "GOMEMLIMIT"))) }}
            # The Go runtime's soft memory limit: the container's limit.
            - name: GOMEMLIMIT
              valueFrom:
                resourceFieldRef:
                  containerName: manager
                  resource: limits.memory
            {{- end }}
            {{- with .Values.extraEnv }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          ports:
            {{- if .Values.metrics.enabled }}
            - name: metrics
              containerPort: {{ .Values.metrics.port }}
              protocol: TCP
            {{- end }}
            {{- if .Values.queuePositions.enabled }}
            - name: queue
              containerPort: {{ .Values.queuePositions.port }}
              protocol: TCP
            {{- end }}
            - name: health
              containerPort: {{ .Values.health.port }}
              protocol: TCP
          livenessProbe:
            httpGet:
              path: /healthz
              port: health
            initialDelaySeconds: 15
            periodSeconds: 20
          readinessProbe:
            httpGet:
              path: /readyz
              port: health
            initialDelaySeconds: 5
            periodSeconds: 10
          resources:
            {{- toYaml .Values.resources | nindent 12 }}
          securityContext:
            {{- toYaml .Values.securityContext | nindent 12 }}
          volumeMounts:
            - name: tmp
              mountPath: /tmp
            {{- if or (eq .Values.delivery.mode "git") .Values.delivery.tenantGit }}
            - name: git
              mountPath: /var/lib/apiary/git
            {{- end }}
            {{- if .Values.bundles.configMap.name }}
            - name: bundles
              mountPath: {{ .Values.bundles.dir }}
              readOnly: true
            {{- end }}
            {{- with .Values.extraVolumeMounts }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
      volumes:
        - name: tmp
          emptyDir: {}
        {{- if or (eq .Values.delivery.mode "git") .Values.delivery.tenantGit }}
        - name: git
          emptyDir: {}
        {{- end }}
        {{- with .Values.bundles.configMap.name }}
        - name: bundles
          configMap:
            name: {{ . }}
            {{- with $.Values.bundles.configMap.items }}
            items:
              {{- toYaml . | nindent 14 }}
            {{- end }}
        {{- end }}
        {{- with .Values.extraVolumes }}
        {{- toYaml . | nindent 8 }}
        {{- end }}
      {{- with .Values.nodeSelector }}
      nodeSelector:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.tolerations }}
      tolerations:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- with .Values.affinity }}
      affinity:
        {{- toYaml . | nindent 8 }}
      {{- end }}
      {{- if .Values.topologySpreadConstraints }}
      topologySpreadConstraints:
        {{- toYaml .Values.topologySpreadConstraints | nindent 8 }}
      {{- else if and .Values.topologySpread.enabled (gt (int .Values.replicaCount) 1) }}
      # The replicas of this Deployment spread over nodes and zones, so that
      # one failure leaves a standby.
      topologySpreadConstraints:
        {{- range .Values.topologySpread.topologyKeys }}
        - maxSkew: 1
          topologyKey: {{ . }}
          whenUnsatisfiable: {{ $.Values.topologySpread.whenUnsatisfiable }}
          labelSelector:
            matchLabels:
              {{- include "apiary.podSelectorLabels" $ | nindent 14 }}
        {{- end }}
      {{- end }}
{{- end }}

{{/*
The labels that select one manager Deployment's pods: a shard's only when
sharded. The context is apiary.deployment's.
*/}}
{{- define "apiary.podSelectorLabels" -}}
{{ include "apiary.selectorLabels" . }}
{{- if .Sharded }}
apiary.exalsius.ai/shard: {{ .Shard | quote }}
{{- end }}
{{- end }}

{{/*
The PodDisruptionBudget of one manager Deployment, when it has more than one
replica. The context is apiary.deployment's.
*/}}
{{- define "apiary.pdb" -}}
{{- if and .Values.podDisruptionBudget.enabled (gt (int .Values.replicaCount) 1) }}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "apiary.fullname" . }}{{ if .Sharded }}-shard-{{ .Shard }}{{ end }}
  namespace: {{ .Release.Namespace }}
  labels:
    {{- include "apiary.labels" . | nindent 4 }}
spec:
  maxUnavailable: {{ .Values.podDisruptionBudget.maxUnavailable }}
  selector:
    matchLabels:
      {{- include "apiary.podSelectorLabels" . | nindent 6 }}
{{- end }}
{{- end }}
