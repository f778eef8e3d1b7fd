// Package deploy holds the deployment artefacts (Dockerfile, compose
// file, Helm chart, systemd units; see README.md) and, in its tests, the
// checks CI runs on them: the config files load with the servers' own
// loaders, the ports match the servers' defaults, and the manifests carry
// the facts the README promises (non-root, readiness on the broker port,
// PodDisruptionBudgets, brokerIP1 from the pod IP). It has no code.
package deploy
