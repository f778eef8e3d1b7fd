package metrics

import "strconv"

// versionDesc renders a RocketMQ MQVersion ordinal as its enum name in
// lower case, the version label RocketMQ puts on connection gauges
// ("v4_9_4"). From V4_0_0_SNAPSHOT (ordinal 212) the enum runs regularly:
// ten patch versions per minor, each as a SNAPSHOT and a release, ten
// minors per major. Older ordinals render as "v" + the ordinal.
func versionDesc(v int32) string {
	const first = 212 // V4_0_0_SNAPSHOT
	if v < first {
		return "v" + strconv.Itoa(int(v))
	}
	i := int(v - first)
	major, minor, patch := 4+i/200, (i%200)/20, (i%20)/2
	s := "v" + strconv.Itoa(major) + "_" + strconv.Itoa(minor) + "_" + strconv.Itoa(patch)
	if i%2 == 0 {
		s += "_snapshot"
	}
	return s
}
