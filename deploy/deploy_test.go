package deploy

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apogeemq/apogee/internal/broker"
	"github.com/apogeemq/apogee/internal/config"
	"github.com/apogeemq/apogee/internal/controller"
	"github.com/apogeemq/apogee/internal/namesrv"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func loadBroker(t *testing.T, path string) broker.Config {
	t.Helper()
	p, err := config.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := broker.DefaultConfig()
	unknown, err := cfg.ApplyProperties(p)
	if err != nil || len(unknown) > 0 {
		t.Fatalf("%s: err %v, unknown keys %q", path, err, unknown)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cfg
}

func loadController(t *testing.T, path string) controller.Config {
	t.Helper()
	p, err := config.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := controller.DefaultConfig()
	unknown, err := config.Apply(p, &cfg)
	if err != nil || len(unknown) > 0 {
		t.Fatalf("%s: err %v, unknown keys %q", path, err, unknown)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cfg
}

func loadNamesrv(t *testing.T, path string) namesrv.Config {
	t.Helper()
	p, err := config.LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := namesrv.DefaultConfig()
	unknown, err := config.Apply(p, &cfg)
	if err != nil || len(unknown) > 0 {
		t.Fatalf("%s: err %v, unknown keys %q", path, err, unknown)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cfg
}

// The ports every artefact documents, from the servers' own defaults.
func defaultPorts() map[string]int {
	b := broker.DefaultConfig()
	return map[string]int{
		"namesrv": namesrv.DefaultListenPort,
		"broker":  b.ListenPort,
		"vip":     b.ListenPort - 2,
		"ha":      b.ListenPort + 1,
		"grpc":    8081, // --grpc-port default (cmd/apogee)
		"metrics": b.MetricsPromExporterPort,
		"console": 8080, // standalone --console-port default
	}
}

func TestDockerfile(t *testing.T) {
	d := read(t, "docker/Dockerfile")
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(d, -1)
	if len(froms) < 2 {
		t.Fatalf("want a multi-stage build, got FROM lines %q", froms)
	}
	if final := froms[len(froms)-1][1]; !strings.HasPrefix(final, "gcr.io/distroless/static") && final != "scratch" {
		t.Errorf("final stage %s: want distroless/static or scratch", final)
	}
	for _, want := range []string{"CGO_ENABLED=0", `VOLUME ["/home/apogee/data"]`, `ENTRYPOINT ["/usr/local/bin/apogee"]`, `CMD ["standalone"`, "bindAddress=0.0.0.0"} {
		if !strings.Contains(d, want) {
			t.Errorf("Dockerfile lacks %s", want)
		}
	}
	user := regexp.MustCompile(`(?m)^USER\s+(\S+)`).FindStringSubmatch(d)
	if user == nil || user[1] == "root" || strings.HasPrefix(user[1], "0") {
		t.Errorf("USER %q: want a non-root user", user)
	}
	expose := regexp.MustCompile(`(?m)^EXPOSE\s+(.+)$`).FindStringSubmatch(d)
	if expose == nil {
		t.Fatal("no EXPOSE")
	}
	exposed := strings.Fields(expose[1])
	for name, port := range defaultPorts() {
		if !slices.Contains(exposed, strconv.Itoa(port)) {
			t.Errorf("EXPOSE lacks the %s port %d", name, port)
		}
		if !regexp.MustCompile(`(?m)^# ` + strconv.Itoa(port) + `\s+\S`).MatchString(d) {
			t.Errorf("port %d (%s) is not documented in a comment", port, name)
		}
	}
}

// composeServices returns each service's block of the compose file, split
// on the two-space-indented keys under services: (the file's own layout;
// the YAML is checked structurally, not with a general parser).
func composeServices(t *testing.T, compose string) map[string]string {
	t.Helper()
	_, rest, ok := strings.Cut(compose, "\nservices:\n")
	if !ok {
		t.Fatal("no services: section")
	}
	if i := strings.Index(rest, "\n\n"); i >= 0 {
		rest = rest[:i]
	}
	services := map[string]string{}
	var name string
	for _, line := range strings.Split(rest, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		if strings.HasPrefix(line, "\t") {
			t.Fatalf("tab in compose file: %q", line)
		}
		if m := regexp.MustCompile(`^  ([a-z0-9-]+):$`).FindStringSubmatch(line); m != nil {
			name = m[1]
			if _, dup := services[name]; dup {
				t.Fatalf("service %s twice", name)
			}
			services[name] = ""
			continue
		}
		if name == "" || !strings.HasPrefix(line, "    ") {
			t.Fatalf("line outside a service: %q", line)
		}
		services[name] += line + "\n"
	}
	return services
}

func TestCompose(t *testing.T) {
	compose := read(t, "compose/docker-compose.yml")
	services := composeServices(t, compose)
	count := map[string]int{}
	ipOf := map[string]string{}
	ipRe := regexp.MustCompile(`ipv4_address: ([0-9.]+)`)
	mountRe := regexp.MustCompile(`- \./(conf/[a-z0-9-]+\.conf):/etc/apogee/([a-z]+\.conf):ro`)
	for name, block := range services {
		role := strings.TrimRight(name, "0123456789")
		if strings.HasPrefix(name, "broker-") {
			role = "broker"
		}
		count[role]++
		if !strings.Contains(block, "<<: *apogee") {
			t.Errorf("%s does not use the shared x-apogee settings", name)
		}
		m := ipRe.FindStringSubmatch(block)
		if m == nil {
			t.Fatalf("%s has no fixed ipv4_address (brokers advertise IPs)", name)
		}
		for other, ip := range ipOf {
			if ip == m[1] {
				t.Errorf("%s and %s share %s", name, other, ip)
			}
		}
		ipOf[name] = m[1]
		if !strings.Contains(block, fmt.Sprintf(`command: ["%s", "-c", "/etc/apogee/%s.conf"]`, role, role)) {
			t.Errorf("%s: command does not run %s -c /etc/apogee/%s.conf", name, role, role)
		}
		if !strings.Contains(block, "-data:/home/apogee/data") {
			t.Errorf("%s: no data volume on /home/apogee/data", name)
		}
		mount := mountRe.FindStringSubmatch(block)
		if mount == nil || mount[2] != role+".conf" {
			t.Fatalf("%s: conf mount %q", name, mount)
		}
		services[name] = mount[1] // from here on: the conf file
	}
	if count["namesrv"] != 2 || count["controller"] != 3 || count["broker"] != 4 || len(count) != 3 {
		t.Fatalf("services %v: want 2 namesrv, 3 controller, 4 broker", count)
	}

	var ctlRPC, ctlRaft []string
	for i := 1; i <= 3; i++ {
		ip := ipOf[fmt.Sprintf("controller%d", i)]
		ctlRPC, ctlRaft = append(ctlRPC, ip+":9770"), append(ctlRaft, ip+":9880")
	}
	for i := 1; i <= 3; i++ {
		name := fmt.Sprintf("controller%d", i)
		cfg := loadController(t, filepath.Join("compose", services[name]))
		if want := ipOf[name] + ":9880"; cfg.JRaftServerID != want {
			t.Errorf("%s: jRaftServerId %s, want its own address %s", name, cfg.JRaftServerID, want)
		}
		if !slices.Equal(cfg.JRaftInitConf, ctlRaft) || !slices.Equal(cfg.JRaftControllerRPCAddr, ctlRPC) {
			t.Errorf("%s: jRaftInitConf %q, jRaftControllerRPCAddr %q; want %q, %q", name, cfg.JRaftInitConf, cfg.JRaftControllerRPCAddr, ctlRaft, ctlRPC)
		}
	}
	ns := []string{ipOf["namesrv1"] + ":9876", ipOf["namesrv2"] + ":9876"}
	for _, name := range []string{"namesrv1", "namesrv2"} {
		cfg := loadNamesrv(t, filepath.Join("compose", services[name]))
		if cfg.ListenPort != 9876 || (cfg.BindAddress != "0.0.0.0" && cfg.BindAddress != "") {
			t.Errorf("%s listens on %s", name, cfg.ListenAddr())
		}
	}
	groups := map[string]int{}
	for name, conf := range services {
		if !strings.HasPrefix(name, "broker-") {
			continue
		}
		cfg := loadBroker(t, filepath.Join("compose", conf))
		groups[cfg.BrokerName]++
		if !cfg.EnableControllerMode || !slices.Equal(cfg.ControllerAddr, ctlRPC) {
			t.Errorf("%s: controller mode %v, controllerAddr %q, want %q", name, cfg.EnableControllerMode, cfg.ControllerAddr, ctlRPC)
		}
		if !slices.Equal(cfg.NamesrvAddr, ns) {
			t.Errorf("%s: namesrvAddr %q, want %q", name, cfg.NamesrvAddr, ns)
		}
		if cfg.BrokerIP1 != ipOf[name] || cfg.BindAddress != "0.0.0.0" {
			t.Errorf("%s: brokerIP1 %s (container %s), bindAddress %s", name, cfg.BrokerIP1, ipOf[name], cfg.BindAddress)
		}
		if !strings.HasPrefix(cfg.Store.StorePathRootDir, "/home/apogee/data/") {
			t.Errorf("%s: store %s is not on the data volume", name, cfg.Store.StorePathRootDir)
		}
	}
	if len(groups) != 2 || groups["broker-a"] != 2 || groups["broker-b"] != 2 {
		t.Errorf("broker groups %v: want broker-a and broker-b of 2", groups)
	}
}

func TestSystemd(t *testing.T) {
	for _, role := range []string{"namesrv", "broker", "controller"} {
		unit := read(t, "systemd/apogee-"+role+".service")
		for _, want := range []string{
			"[Unit]", "[Service]", "[Install]",
			"ExecStart=/usr/local/bin/apogee " + role + " -c /etc/apogee/" + role + ".conf",
			"ExecStartPre=/usr/local/bin/apogee check --role " + role,
			"User=apogee", "Restart=on-failure", "LimitNOFILE=", "TimeoutStopSec=",
		} {
			if !strings.Contains(unit, want) {
				t.Errorf("apogee-%s.service lacks %s", role, want)
			}
		}
	}
	b := loadBroker(t, "systemd/broker.conf")
	if b.BindAddress != "0.0.0.0" || b.BrokerIP1 == b.BindAddress {
		t.Errorf("systemd broker.conf: bind %s, advertise %s", b.BindAddress, b.BrokerIP1)
	}
	loadNamesrv(t, "systemd/namesrv.conf")
	loadController(t, "systemd/controller.conf")
}

// TestHelmChartSources checks the chart's templates; TestHelmRendered
// checks what `helm template` made of them (CI renders it first).
func TestHelmChartSources(t *testing.T) {
	for _, f := range []string{"Chart.yaml", "values.yaml", "templates/_helpers.tpl", "templates/namesrv.yaml", "templates/controller.yaml", "templates/broker.yaml"} {
		read(t, filepath.Join("helm/apogee", f))
	}
	chart := read(t, "helm/apogee/Chart.yaml")
	for _, want := range []string{"apiVersion: v2", "name: apogee", "version: "} {
		if !strings.Contains(chart, want) {
			t.Errorf("Chart.yaml lacks %s", want)
		}
	}
	values := read(t, "helm/apogee/values.yaml")
	for _, want := range []string{"runAsNonRoot: true", "port: 10911", "port: 9876", "groups: [broker-a, broker-b]"} {
		if !strings.Contains(values, want) {
			t.Errorf("values.yaml lacks %s", want)
		}
	}
}

// docs splits rendered YAML into documents, keyed "Kind/name".
func docs(t *testing.T, rendered string) map[string]string {
	t.Helper()
	out := map[string]string{}
	kindRe := regexp.MustCompile(`(?m)^kind: (\S+)$`)
	nameRe := regexp.MustCompile(`(?m)^  name: (\S+)$`)
	for _, d := range strings.Split(rendered, "\n---") {
		k, n := kindRe.FindStringSubmatch(d), nameRe.FindStringSubmatch(d)
		if k == nil {
			continue
		}
		if n == nil {
			t.Fatalf("a %s without a name", k[1])
		}
		out[k[1]+"/"+n[1]] = d
	}
	return out
}

func TestHelmRendered(t *testing.T) {
	path := os.Getenv("APOGEE_HELM_TEMPLATE")
	if path == "" {
		t.Skip("set APOGEE_HELM_TEMPLATE to the output of `helm template deploy/helm/apogee` (CI does)")
	}
	all := docs(t, read(t, path))
	var sts, pdb, headless int
	for key, d := range all {
		kind, _, _ := strings.Cut(key, "/")
		switch kind {
		case "StatefulSet":
			sts++
			for _, want := range []string{"runAsNonRoot: true", "readinessProbe:", "tcpSocket:", "port: remoting"} {
				if !strings.Contains(d, want) {
					t.Errorf("%s lacks %s", key, want)
				}
			}
			checkSetArgs(t, key, d)
			if strings.Contains(d, "component: broker") {
				for _, want := range []string{"fieldPath: status.podIP", "brokerIP1=$(POD_IP)", "bindAddress=0.0.0.0", "enableControllerMode=true", "startupProbe:",
					"volumeClaimTemplates:", "mountPath: /home/apogee/data", "containerPort: 10911", "name: NAMESRV_ADDR"} {
					if !strings.Contains(d, want) {
						t.Errorf("%s lacks %s", key, want)
					}
				}
			}
		case "PodDisruptionBudget":
			pdb++
		case "Service":
			if strings.Contains(d, "clusterIP: None") {
				headless++
			}
		}
	}
	// namesrv + controller + one per broker group (values.yaml: 2).
	if sts != 4 || pdb != 4 || headless != 4 {
		t.Errorf("rendered %d StatefulSets, %d PDBs, %d headless Services; want 4 of each (%v)", sts, pdb, headless, slices.Sorted(maps.Keys(all)))
	}
}

// checkSetArgs applies every `--set key=value` of a rendered StatefulSet's
// container args to the config its role uses, with the downward-API
// variables given pod 0's values, then validates the result: a key the server does not know, or a
// value it cannot parse, fails here rather than in a crash-looping pod.
func checkSetArgs(t *testing.T, key, doc string) {
	t.Helper()
	var args []string
	in := false
	for _, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "args:":
			in = true
		case in && strings.HasPrefix(trimmed, "- "):
			args = append(args, strings.Trim(strings.TrimPrefix(trimmed, "- "), `"`))
		case in:
			in = false
		}
	}
	if len(args) == 0 {
		t.Fatalf("%s: no container args", key)
	}
	_, sts, _ := strings.Cut(key, "/")
	expand := strings.NewReplacer("$(POD_IP)", "10.1.2.3", "$(POD_NAME)", sts+"-0")
	var (
		setKey   func(k, v string) (bool, error)
		validate func() error
	)
	switch args[0] {
	case "broker":
		cfg := broker.DefaultConfig()
		setKey, validate = cfg.SetKey, cfg.Validate
	case "controller":
		cfg := controller.DefaultConfig()
		setKey = func(k, v string) (bool, error) { return config.SetKey(&cfg, k, v) }
		validate = cfg.Validate
	case "namesrv":
		return // flags only, checked by their own tests
	default:
		t.Fatalf("%s runs %q", key, args[0])
	}
	n := 0
	for i := 1; i < len(args); i++ {
		if args[i] != "--set" || i+1 == len(args) {
			continue
		}
		k, v, _ := strings.Cut(expand.Replace(args[i+1]), "=")
		known, err := setKey(k, v)
		if !known || err != nil {
			t.Errorf("%s: --set %s=%s: known %v, err %v", key, k, v, known, err)
		}
		n++
	}
	if n == 0 {
		t.Errorf("%s: no --set args", key)
	}
	if err := validate(); err != nil {
		t.Errorf("%s: the pod's config is refused: %v", key, err)
	}
}

// TestHelmRenderedExternal checks `helm template` with
// broker.external.enabled and an address per pod (CI renders it): one
// LoadBalancer Service per broker pod selecting that pod alone and pinned to
// its address, a ConfigMap of the addresses, and broker pods that read
// theirs with --broker-ip-file (a valid brokerIP1).
func TestHelmRenderedExternal(t *testing.T) {
	path := os.Getenv("APOGEE_HELM_TEMPLATE_EXTERNAL")
	if path == "" {
		t.Skip("set APOGEE_HELM_TEMPLATE_EXTERNAL to `helm template` with broker.external (CI does)")
	}
	all := docs(t, read(t, path))
	podRe := regexp.MustCompile(`statefulset.kubernetes.io/pod-name: (\S+)`)
	lbRe := regexp.MustCompile(`loadBalancerIP: "([^"]+)"`)
	addrRe := regexp.MustCompile(`(?m)^  (\S+-\d+): "([^"]+)"$`)
	addrs, pinned := map[string]string{}, map[string]string{} // pod -> advertised / Service address
	var services, brokerSts int
	for key, d := range all {
		kind, name, _ := strings.Cut(key, "/")
		switch {
		case kind == "ConfigMap" && strings.HasSuffix(name, "-external"):
			for _, m := range addrRe.FindAllStringSubmatch(d, -1) {
				addrs[m[1]] = m[2]
			}
		case kind == "Service" && strings.HasSuffix(name, "-external"):
			services++
			pod, lb := podRe.FindStringSubmatch(d), lbRe.FindStringSubmatch(d)
			if pod == nil || lb == nil || name != pod[1]+"-external" || !strings.Contains(d, "type: LoadBalancer") {
				t.Errorf("%s: want a LoadBalancer selecting its own pod with a loadBalancerIP:\n%s", key, d)
				continue
			}
			pinned[pod[1]] = lb[1]
		case kind == "StatefulSet" && strings.Contains(d, "component: broker"):
			brokerSts++
			for _, want := range []string{"fieldPath: metadata.name", "--broker-ip-file", "/etc/apogee/external/$(POD_NAME)", "mountPath: /etc/apogee/external"} {
				if !strings.Contains(d, want) {
					t.Errorf("%s lacks %s", key, want)
				}
			}
		}
	}
	if services == 0 || services != len(addrs) || brokerSts == 0 {
		t.Fatalf("%d external Services, %d addresses, %d broker StatefulSets", services, len(addrs), brokerSts)
	}
	for pod, addr := range addrs {
		if pinned[pod] != addr {
			t.Errorf("pod %s advertises %s, its Service is pinned to %q", pod, addr, pinned[pod])
		}
		cfg := broker.DefaultConfig()
		if _, err := cfg.SetKey("brokerIP1", addr); err != nil {
			t.Errorf("pod %s: brokerIP1=%s refused: %v", pod, addr, err)
		}
	}
}
