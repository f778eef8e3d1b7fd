package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is the release name, set at link time:
//
//	go build -ldflags "-X main.version=v1.2.3" ./cmd/apogee
//
// Without it the module version from the build info is used ("(devel)"
// for a build from a checkout). The linker writes it; nothing assigns it.
var version string

// versionString is what `apogee --version` prints after "apogee version":
// the version, the VCS commit and time when the build recorded them (and
// "+dirty" for a modified tree), and the Go toolchain.
func versionString() string {
	v, commit, when, dirty := version, "", "", false
	info, ok := debug.ReadBuildInfo()
	if ok {
		if v == "" {
			v = info.Main.Version
		}
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	if commit == "" {
		commit = "unknown"
	} else if dirty {
		commit += "+dirty"
	}
	s := fmt.Sprintf("%s (commit %s", v, commit)
	if when != "" {
		s += ", " + when
	}
	return s + fmt.Sprintf(", %s %s/%s)", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
