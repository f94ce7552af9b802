{{/*
Chart name, truncated to 63 characters (the DNS label limit).
*/}}
{{- define "amp-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Fully qualified app name: the release name, with the chart name appended
unless the release name already contains it.
*/}}
{{- define "amp-exporter.fullname" -}}
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

{{- define "amp-exporter.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Selector labels: stable for the life of a release, so never the chart or
app version (a Deployment's selector cannot change on upgrade).
*/}}
{{- define "amp-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "amp-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "amp-exporter.labels" -}}
helm.sh/chart: {{ include "amp-exporter.chart" . }}
{{ include "amp-exporter.selectorLabels" . }}
app.kubernetes.io/version: {{ include "amp-exporter.imageTag" . | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/component: exporter
app.kubernetes.io/part-of: amp-exporter
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "amp-exporter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "amp-exporter.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "amp-exporter.imageTag" -}}
{{- .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{- define "amp-exporter.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (include "amp-exporter.imageTag" .) }}
{{- end }}
{{- end }}

{{/* Mount points inside the container: part of the chart's contract. */}}
{{- define "amp-exporter.storagePath" -}}/var/lib/amp-exporter{{- end }}
{{- define "amp-exporter.configDir" -}}/etc/amp-exporter/config{{- end }}
{{- define "amp-exporter.secretsDir" -}}/etc/amp-exporter/secrets{{- end }}
{{- define "amp-exporter.webConfigDir" -}}/etc/amp-exporter/web{{- end }}
{{- define "amp-exporter.workspaceSecretDir" -}}/etc/amp-exporter/workspace{{- end }}
{{- define "amp-exporter.workspaceSecretFile" -}}client-secret{{- end }}
{{- define "amp-exporter.workspaceSecretEnv" -}}AMP_WORKSPACE_CLIENT_SECRET{{- end }}

{{- define "amp-exporter.threadsMounted" -}}
{{- if or .Values.threads.hostPath .Values.threads.existingClaim }}true{{ end }}
{{- end }}

{{- define "amp-exporter.streamsMounted" -}}
{{- if or .Values.streams.hostPath .Values.streams.existingClaim }}true{{ end }}
{{- end }}

{{- define "amp-exporter.pvcEnabled" -}}
{{- if or .Values.persistence.enabled .Values.persistence.existingClaim }}true{{ end }}
{{- end }}

{{- define "amp-exporter.pvcName" -}}
{{- .Values.persistence.existingClaim | default (printf "%s-state" (include "amp-exporter.fullname" .)) }}
{{- end }}

{{/*
The exporter's configuration file: .Values.config, with threads.dirs
defaulting to the thread mount and streams.dirs to the stream-json mount
(when one is mounted). An explicitly configured list wins. With
workspace.enabled, amp_workspace gets the workspace block's settings and a
reference to the client secret (a file or an environment variable), never
the secret.
*/}}
{{- define "amp-exporter.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) }}
{{- $threads := get $cfg "threads" | default dict }}
{{- if not (get $threads "dirs") }}
{{- $_ := set $threads "dirs" (list .Values.threads.mountPath) }}
{{- end }}
{{- $_ := set $cfg "threads" $threads }}
{{- if include "amp-exporter.streamsMounted" . }}
{{- $streams := get $cfg "streams" | default dict }}
{{- if not (get $streams "dirs") }}
{{- $_ := set $streams "dirs" (list .Values.streams.mountPath) }}
{{- end }}
{{- $_ := set $cfg "streams" $streams }}
{{- end }}
{{- with .Values.workspace }}
{{- if .enabled }}
{{- /* config.amp_workspace gives the keys the workspace block does not
  have (api_url, page_size, …); the block's own keys are set here. */}}
{{- $ws := get $cfg "amp_workspace" | default dict }}
{{- $_ := set $ws "enabled" true }}
{{- $_ := set $ws "client_id" .clientID }}
{{- if eq .clientSecret.mountAs "env" }}
{{- $_ := set $ws "client_secret_env" (include "amp-exporter.workspaceSecretEnv" $) }}
{{- else }}
{{- $_ := set $ws "client_secret_file" (printf "%s/%s" (include "amp-exporter.workspaceSecretDir" $) (include "amp-exporter.workspaceSecretFile" $)) }}
{{- end }}
{{- $_ := set $ws "client_auth" .clientAuth }}
{{- with .resource }}
{{- $_ := set $ws "resource" . }}
{{- end }}
{{- with .scopes }}
{{- $_ := set $ws "scopes" . }}
{{- end }}
{{- $_ := set $ws "user_label" .userLabel }}
{{- $_ := set $ws "max_requests_per_minute" .maxRequestsPerMinute }}
{{- $_ := set $ws "sync_interval" .syncInterval }}
{{- $_ := set $ws "history_days" .historyDays }}
{{- $_ := set $cfg "amp_workspace" $ws }}
{{- end }}
{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/* A source volume (threads or streams): hostPath or an existing claim, read-only. */}}
{{- define "amp-exporter.sourceVolume" -}}
{{- if .src.existingClaim }}
- name: {{ .name }}
  persistentVolumeClaim:
    claimName: {{ .src.existingClaim }}
    readOnly: true
{{- else if .src.hostPath }}
- name: {{ .name }}
  hostPath:
    path: {{ .src.hostPath }}
    {{- with .src.hostPathType }}
    type: {{ . }}
    {{- end }}
{{- end }}
{{- end }}
