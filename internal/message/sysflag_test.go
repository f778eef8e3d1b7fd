package message

import (
	"net/netip"
	"testing"
)

func TestSysFlagHelpers(t *testing.T) {
	tests := []struct {
		name     string
		flag     int32
		txType   int32
		zlib     bool
		compType int32
	}{
		{"plain", 0, SysFlagTransactionNotType, false, 0},
		{"go compressed", SysFlagCompressed, SysFlagTransactionNotType, true, 0},
		{"java zlib", SysFlagCompressed | SysFlagCompressionZLIB, 0, true, SysFlagCompressionZLIB},
		{"java lz4", SysFlagCompressed | SysFlagCompressionLZ4, 0, false, SysFlagCompressionLZ4},
		{"zstd type without flag", SysFlagCompressionZSTD, 0, false, SysFlagCompressionZSTD},
		{"prepared", SysFlagTransactionPreparedType | SysFlagMultiTags, SysFlagTransactionPreparedType, false, 0},
		{"commit", SysFlagTransactionCommitType | SysFlagBornHostV6, SysFlagTransactionCommitType, false, 0},
		{"rollback", SysFlagTransactionRollbackType, SysFlagTransactionRollbackType, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := TransactionType(tc.flag); got != tc.txType {
				t.Errorf("TransactionType = %#x, want %#x", got, tc.txType)
			}
			if got := IsZlibCompressed(tc.flag); got != tc.zlib {
				t.Errorf("IsZlibCompressed = %v", got)
			}
			if got := CompressionType(tc.flag); got != tc.compType {
				t.Errorf("CompressionType = %#x", got)
			}
			reset := SetTransactionType(tc.flag, SysFlagTransactionCommitType)
			if TransactionType(reset) != SysFlagTransactionCommitType || reset&^0xC != tc.flag&^0xC {
				t.Errorf("SetTransactionType = %#x", reset)
			}
		})
	}
}

func TestHostSysFlagAndInvalidHosts(t *testing.T) {
	v6 := netip.MustParseAddrPort("[2001:db8::1]:1")
	v4 := netip.MustParseAddrPort("1.2.3.4:5")
	mapped := netip.MustParseAddrPort("[::ffff:1.2.3.4]:5")
	if got := HostSysFlag(SysFlagBornHostV6|SysFlagStoreHostV6|SysFlagCompressed, v4, mapped); got != SysFlagCompressed {
		t.Errorf("ipv4 hosts keep v6 bits: %#x", got)
	}
	if got := HostSysFlag(0, v6, v6); got != SysFlagBornHostV6|SysFlagStoreHostV6 {
		t.Errorf("ipv6 hosts: %#x", got)
	}
	// A missing born host is written as 0.0.0.0:0, never rejected.
	m := sampleExt()
	m.BornHost = netip.AddrPort{}
	rec, err := AppendStored(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	dec, _, err := DecodeStored(rec, DecodeOptions{})
	if err != nil || dec.BornHost != netip.MustParseAddrPort("0.0.0.0:0") {
		t.Errorf("invalid born host decoded as %v, %v", dec.BornHost, err)
	}
	if id := OffsetMsgID(netip.AddrPort{}, 1); id != "00000000000000000000000000000001" {
		t.Errorf("OffsetMsgID of an invalid host = %s", id)
	}
}

func TestMessageTransactionAndRetryHelpers(t *testing.T) {
	var m Message
	if m.TransactionPrepared() || m.MaxReconsumeTimes() != 0 {
		t.Fatal("zero message claims transaction or retries")
	}
	m.SetProperty(PropertyTransactionPrepared, "true")
	m.SetProperty(PropertyMaxReconsumeTimes, "16")
	m.SetProperty(PropertyReconsumeTime, "not a number")
	if !m.TransactionPrepared() || m.MaxReconsumeTimes() != 16 || m.ReconsumeTime() != 0 {
		t.Errorf("helpers: %v %d %d", m.TransactionPrepared(), m.MaxReconsumeTimes(), m.ReconsumeTime())
	}
}
