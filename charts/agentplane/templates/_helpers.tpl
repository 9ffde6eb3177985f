{{/* The release's base name, at most 63 characters. */}}
{{- define "agentplane.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "agentplane.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* Selector labels of one component: pass (dict "ctx" $ "component" "api"). */}}
{{- define "agentplane.selector" -}}
app.kubernetes.io/name: {{ .ctx.Chart.Name }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end -}}

{{- define "agentplane.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "agentplane.configName" -}}{{ include "agentplane.fullname" . }}-config{{- end -}}
{{- define "agentplane.envSecretName" -}}{{ include "agentplane.fullname" . }}-env{{- end -}}
{{- define "agentplane.adminKeySecretName" -}}{{ .Values.adminKey.existingSecret | default (printf "%s-admin-key" (include "agentplane.fullname" .)) }}{{- end -}}
{{- define "agentplane.controllerKeySecretName" -}}{{ .Values.controller.apiKeySecret | default (printf "%s-controller-key" (include "agentplane.fullname" .)) }}{{- end -}}

{{/*
The controller's key when the chart makes it: the one in the cluster (an upgrade keeps it), else a new one. Worked
out once per render and remembered, so the Secret and the API's checksum of it agree.
*/}}
{{- define "agentplane.controllerKey" -}}
{{- if not (hasKey .Values.controller "generatedKey") -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "agentplane.controllerKeySecretName" .) -}}
{{- $key := printf "ap_%s" (randAlphaNum 40) -}}
{{- if and $existing (index $existing.data "api-key") -}}
{{- $key = index $existing.data "api-key" | b64dec -}}
{{- end -}}
{{- $_ := set .Values.controller "generatedKey" $key -}}
{{- end -}}
{{- .Values.controller.generatedKey -}}
{{- end -}}

{{/* The environment every Agentplane process reads: the ConfigMap, then each secret from where it lives. */}}
{{- define "agentplane.env" -}}
{{- if eq .Values.layout "production" }}
- name: DATABASE_URL
  valueFrom:
    secretKeyRef:
      {{- if .Values.database.existingSecret.name }}
      name: {{ .Values.database.existingSecret.name }}
      key: {{ .Values.database.existingSecret.key }}
      {{- else }}
      name: {{ include "agentplane.envSecretName" . }}
      key: DATABASE_URL
      {{- end }}
{{- end }}
{{- if and (eq .Values.layout "production") (or .Values.s3.existingSecret .Values.s3.accessKey) }}
- name: S3_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.s3.existingSecret | default (include "agentplane.envSecretName" .) }}
      key: S3_ACCESS_KEY
- name: S3_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.s3.existingSecret | default (include "agentplane.envSecretName" .) }}
      key: S3_SECRET_KEY
{{- end }}
{{- if or .Values.providers.existingSecret .Values.providers.openai.apiKey }}
- name: OPENAI_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.providers.existingSecret | default (include "agentplane.envSecretName" .) }}
      key: OPENAI_API_KEY
      optional: true
{{- end }}
{{- if or .Values.providers.existingSecret .Values.providers.anthropic.apiKey }}
- name: ANTHROPIC_API_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.providers.existingSecret | default (include "agentplane.envSecretName" .) }}
      key: ANTHROPIC_API_KEY
      optional: true
{{- end }}
{{- end -}}

{{/*
The deployment's rate limits: the API applies them to the requests and runs it is asked for, the worker to the
runs schedules and experiments start for the same keys and projects.
*/}}
{{- define "agentplane.rateLimitEnv" -}}
{{- with .Values.api.rateLimits.requestsPerMinute }}
- { name: AGENTPLANE_RATE_LIMIT_REQUESTS_PER_MINUTE, value: {{ . | quote }} }
{{- end }}
{{- with .Values.api.rateLimits.concurrentRuns }}
- { name: AGENTPLANE_RATE_LIMIT_CONCURRENT_RUNS, value: {{ . | quote }} }
{{- end }}
{{- with .Values.api.rateLimits.projectRequestsPerMinute }}
- { name: AGENTPLANE_RATE_LIMIT_PROJECT_REQUESTS_PER_MINUTE, value: {{ . | quote }} }
{{- end }}
{{- with .Values.api.rateLimits.projectConcurrentRuns }}
- { name: AGENTPLANE_RATE_LIMIT_PROJECT_CONCURRENT_RUNS, value: {{ . | quote }} }
{{- end }}
{{- end -}}

{{/* The API's own settings, which its pods and the evaluation layout's pod both read. */}}
{{- define "agentplane.apiEnv" -}}
- { name: AGENTPLANE_METRICS_PORT, value: {{ .Values.api.metricsPort | quote }} }
- { name: AGENTPLANE_BASE_PATH, value: {{ .Values.api.basePath | quote }} }
- { name: AGENTPLANE_SESSION_TTL_SECONDS, value: {{ .Values.api.sessionTtlSeconds | quote }} }
- { name: AGENTPLANE_IDEMPOTENCY_KEY_HOURS, value: {{ .Values.api.idempotencyKeyHours | quote }} }
- { name: AGENTPLANE_FILE_STORAGE_GIB_PER_PROJECT, value: {{ .Values.api.fileStorageGiBPerProject | quote }} }
- { name: AGENTPLANE_EXPERIMENTS_PER_PROJECT, value: {{ .Values.api.experimentsPerProject | quote }} }
- { name: AGENTPLANE_EVENT_STREAMS_PER_KEY, value: {{ .Values.api.eventStreams.perKey | quote }} }
- { name: AGENTPLANE_EVENT_STREAMS_PER_PROCESS, value: {{ .Values.api.eventStreams.perProcess | quote }} }
- { name: AGENTPLANE_EVENT_STREAM_STALL_SECONDS, value: {{ .Values.api.eventStreams.stallSeconds | quote }} }
- { name: AGENTPLANE_API_REQUESTS_AT_ONCE, value: {{ .Values.api.admission.requestsAtOnce | quote }} }
- { name: AGENTPLANE_API_REQUESTS_QUEUED_PER_PROJECT, value: {{ .Values.api.admission.queuedPerProject | quote }} }
- { name: AGENTPLANE_API_QUEUE_WAIT_SECONDS, value: {{ .Values.api.admission.queueWaitSeconds | quote }} }
- { name: AGENTPLANE_API_FAIR_SHARE_BUSY_PERCENT, value: {{ .Values.api.admission.fairShareBusyPercent | quote }} }
- { name: AGENTPLANE_API_FAIR_SHARE_MAX_WAIT_MS, value: {{ .Values.api.admission.fairShareMaxWaitMs | quote }} }
{{- with .Values.api.workerPools }}
- name: AGENTPLANE_WORKER_POOLS
  value: "{{ range $i, $pool := . }}{{ if hasPrefix "network." $pool.taskQueue }}{{ fail (printf "api.workerPools: %s starts with network., which the controller's pools use; name it otherwise" $pool.taskQueue) }}{{ end }}{{ if $i }},{{ end }}{{ $pool.taskQueue }}={{ $pool.project }}{{ end }}"
{{- end }}
{{- include "agentplane.rateLimitEnv" . }}
- name: AGENTPLANE_ADMIN_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "agentplane.adminKeySecretName" . }}
      key: api-key
{{- if .Values.controller.enabled }}
- name: AGENTPLANE_CONTROLLER_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "agentplane.controllerKeySecretName" . }}
      key: api-key
{{- end }}
{{- end -}}

{{- define "agentplane.podSecurity" -}}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}
