package archtest

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/apogeemq/apogee"

// rule says which packages a package (and its subpackages) must never
// depend on, directly or transitively.
type rule struct {
	pkg    string
	denied []string
}

// rules mirrors the import table in CONTRIBUTING.md. Denied entries are package
// path prefixes; third-party prefixes guard against the store learning about
// sockets or metrics.
var rules = []rule{
	{"internal/protocol", []string{"internal/remoting", "internal/store", "internal/broker", "internal/namesrv", "client"}},
	{"internal/message", []string{"internal/protocol", "internal/remoting", "internal/store", "internal/broker", "net/http"}},
	{"internal/store", []string{"internal/remoting", "internal/protocol", "internal/broker", "internal/namesrv", "github.com/prometheus", "net/http"}},
	{"internal/remoting", []string{"internal/store", "internal/broker", "internal/namesrv", "client"}},
	{"internal/namesrv", []string{"internal/store", "internal/broker"}},
	{"internal/broker", []string{"internal/namesrv", "client", "internal/metrics"}},
	{"internal/ha", []string{"internal/broker", "internal/remoting"}},
	// The SQL92 filter is a pure package: no I/O of ours, no sockets.
	{"internal/filter", []string{"internal/protocol", "internal/remoting", "internal/store", "internal/broker", "internal/message", "net"}},
	// The timer store sits on the store; it never learns about sockets or the broker.
	{"internal/timer", []string{"internal/broker", "internal/remoting", "internal/protocol", "internal/namesrv", "net/http"}},
	// ACL 2.0 is a pure package: no sockets, no servers; they call it.
	// TLS settings and the sniffing listener: pure crypto/tls and net.
	{"internal/tlsconf", []string{"internal/remoting", "internal/protocol", "internal/store", "internal/broker", "internal/namesrv", "client"}},
	{"internal/auth", []string{"internal/remoting", "internal/store", "internal/broker", "internal/namesrv", "client", "net/http"}},
	{"client", []string{"internal/store", "internal/broker", "internal/namesrv", "github.com/prometheus"}},
	// The console reaches the cluster through client/admin (which dials
	// through remoting); TestConsoleImportsOnlyAdmin keeps its own imports
	// to the SDK.
	{"internal/console", []string{"internal/store", "internal/broker", "internal/namesrv", "internal/metrics"}},
	// The POP state store is a leaf: no sockets, no commit log, no request codes.
	{"internal/pop", []string{"internal/", "client", "net"}},
	// The goroutine-group helper is a leaf every component imports.
	{"internal/run", []string{"internal/", "client", "net"}},
	// RocketMQ's reserved names and naming rules: a leaf client, broker and store share.
	{"internal/names", []string{"internal/", "client", "net"}},
	// Lite-topic names and registry: a leaf (no I/O, no goroutines).
	{"internal/lite", []string{"internal/", "client", "net"}},
	// The gRPC endpoint reaches brokers over remoting only; the broker never
	// links the generated gRPC code (the official 5.x client registers the
	// same protobuf names, so in-process e2e clusters must stay free of it).
	{"internal/proxy", []string{"internal/store", "internal/broker", "internal/namesrv", "internal/ha"}},
	{"internal/rmqpb", []string{"internal/protocol", "internal/remoting", "internal/message", "internal/proxy"}},
	{"internal/broker", []string{"internal/proxy", "internal/rmqpb"}},
}

type listed struct {
	ImportPath string
	Deps       []string
}

func TestImportRules(t *testing.T) {
	out, err := exec.Command("go", "list", "-e", "-json=ImportPath,Deps", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	checked := 0
	sawControl := false
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		// Positive control: the broker does depend on the store, so a
		// go list that lost the dependency lists cannot pass silently.
		if rel == "internal/broker" && slices.Contains(p.Deps, module+"/internal/store") {
			sawControl = true
		}
		for _, r := range rules {
			if rel != r.pkg && !strings.HasPrefix(rel, r.pkg+"/") {
				continue
			}
			checked++
			for _, dep := range p.Deps {
				for _, d := range r.denied {
					target := d
					if strings.HasPrefix(d, "internal/") || d == "client" {
						target = module + "/" + d
					}
					if dep == target || strings.HasPrefix(dep, target+"/") {
						t.Errorf("%s depends on %s (denied by the layout rules in CONTRIBUTING.md)", p.ImportPath, dep)
					}
				}
			}
		}
	}
	if !sawControl {
		t.Error("positive control failed: internal/broker's dependencies do not list internal/store")
	}
	t.Logf("checked %d packages against %d rules", checked, len(rules))
}

// TestConsoleImportsOnlyAdmin: the console's own imports from this module
// are the SDK (client, client/admin) and the shared names; everything it
// does to the cluster goes through the admin client, like RocketMQ
// Dashboard.
func TestConsoleImportsOnlyAdmin(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", module+"/internal/console").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var p struct{ Imports []string }
	if err := json.Unmarshal(out, &p); err != nil {
		t.Fatal(err)
	}
	allowed := []string{module + "/client", module + "/client/admin", module + "/internal/names"}
	seenAdmin := false
	for _, imp := range p.Imports {
		if !strings.HasPrefix(imp, module+"/") {
			continue
		}
		if !slices.Contains(allowed, imp) {
			t.Errorf("internal/console imports %s; it may import only %v", imp, allowed)
		}
		seenAdmin = seenAdmin || imp == module+"/client/admin"
	}
	if !seenAdmin {
		t.Error("positive control failed: internal/console does not import client/admin")
	}
}
