package client

import "testing"

func TestNamespaceWrap(t *testing.T) {
	tests := []struct{ ns, name, wire string }{
		{"", "T", "T"},
		{"ns", "T", "ns%T"},
		{"ns", "ns%T", "ns%T"},
		{"ns", "%RETRY%g", "%RETRY%ns%g"},
		{"ns", "%DLQ%g", "%DLQ%ns%g"},
		{"ns", "TBW102", "TBW102"},
		{"ns", "rmq_sys_x", "rmq_sys_x"},
		{"ns", "DefaultCluster_REPLY_TOPIC", "DefaultCluster_REPLY_TOPIC"},
	}
	for _, tc := range tests {
		if got := wrapNamespace(tc.ns, tc.name); got != tc.wire {
			t.Errorf("wrap(%q, %q) = %q, want %q", tc.ns, tc.name, got, tc.wire)
		}
		if tc.name == tc.wire || tc.name == "ns%T" {
			continue
		}
		if got := unwrapNamespace(tc.ns, tc.wire); got != tc.name {
			t.Errorf("unwrap(%q, %q) = %q, want %q", tc.ns, tc.wire, got, tc.name)
		}
	}
}
