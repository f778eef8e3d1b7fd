package protocol

import "strconv"

// VersionDesc renders a RocketMQ MQVersion ordinal (the version field of
// every remoting command) as its enum name, "V4_9_4", as Java's
// MQVersion.getVersionDesc does. From V4_0_0_SNAPSHOT (ordinal 212) the
// enum runs regularly: ten patch versions per minor, each as a SNAPSHOT and
// a release, ten minors per major. Older ordinals render as "V" + the
// ordinal.
func VersionDesc(v int32) string {
	const first = 212 // V4_0_0_SNAPSHOT
	if v < first {
		return "V" + strconv.Itoa(int(v))
	}
	i := int(v - first)
	major, minor, patch := 4+i/200, (i%200)/20, (i%20)/2
	s := "V" + strconv.Itoa(major) + "_" + strconv.Itoa(minor) + "_" + strconv.Itoa(patch)
	if i%2 == 0 {
		s += "_SNAPSHOT"
	}
	return s
}
