{{- define "apogee.fullname" -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 40 | trimSuffix "-" -}}
{{- end -}}

{{- define "apogee.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "apogee.image" -}}
{{ printf "%s:%s" .Values.image.repository .Values.image.tag }}
{{- end -}}

{{/* namesrvAddr: every name-server pod through the headless service. */}}
{{- define "apogee.namesrvAddr" -}}
{{- $full := include "apogee.fullname" . -}}
{{- $addrs := list -}}
{{- range $i := until (int .Values.namesrv.replicas) -}}
{{- $addrs = append $addrs (printf "%s-namesrv-%d.%s-namesrv:%d" $full $i $full (int $.Values.namesrv.port)) -}}
{{- end -}}
{{- join ";" $addrs -}}
{{- end -}}

{{/* controller addresses, joined by sep, on port. */}}
{{- define "apogee.controllerAddrs" -}}
{{- $full := include "apogee.fullname" .root -}}
{{- $addrs := list -}}
{{- range $i := until (int .root.Values.controller.replicas) -}}
{{- $addrs = append $addrs (printf "%s-controller-%d.%s-controller:%d" $full $i $full (int $.port)) -}}
{{- end -}}
{{- join .sep $addrs -}}
{{- end -}}
