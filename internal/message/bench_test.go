package message

import (
	"net/netip"
	"testing"
)

func benchExt(size int) *Ext {
	m := sampleExt()
	m.Body = make([]byte, size)
	for i := range m.Body {
		m.Body[i] = byte(i)
	}
	m.Properties = map[string]string{
		PropertyTags:                      "TagA",
		PropertyKeys:                      "order-1 order-2",
		PropertyUniqClientMessageIDKeyidx: "7F0000010001000000000000000A0001",
		PropertyWaitStoreMsgOK:            "true",
		PropertyMsgRegion:                 "DefaultRegion",
		PropertyTraceSwitch:               "true",
		PropertyCluster:                   "DefaultCluster",
	}
	return m
}

// BenchmarkAppendStored encodes a 1 KiB message into a reused buffer, the
// store's hot path; baseline=copy is a plain copy of the body for scale.
func BenchmarkAppendStored(b *testing.B) {
	m := benchExt(1024)
	buf := make([]byte, 0, 4096)
	b.Run("size=1KiB", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(StoredSize(m)))
		for b.Loop() {
			var err error
			if buf, err = AppendStored(buf[:0], m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("baseline=copy", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(StoredSize(m)))
		for b.Loop() {
			buf = append(buf[:0], m.Body...)
		}
	})
}

func BenchmarkDecodeStored(b *testing.B) {
	rec, err := AppendStored(nil, benchExt(1024))
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		opt  DecodeOptions
	}{
		{"size=1KiB", DecodeOptions{}},
		{"size=1KiB/crc", DecodeOptions{VerifyCRC: true}},
		{"size=1KiB/skipbody", DecodeOptions{SkipBody: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(rec)))
			for b.Loop() {
				if _, _, err := DecodeStored(rec, bc.opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkLookupProperty(b *testing.B) {
	props := EncodeProperties(benchExt(0).Properties)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := LookupProperty(props, PropertyUniqClientMessageIDKeyidx); !ok {
			b.Fatal("missing")
		}
	}
}

func BenchmarkUniqIDNext(b *testing.B) {
	g := NewUniqIDGenerator(netip.MustParseAddr("10.0.0.1"), 1)
	b.ReportAllocs()
	for b.Loop() {
		_ = g.Next()
	}
}

// BenchmarkViewStored reads what dispatch needs (offsets, tag code, keys)
// through the zero-copy view.
func BenchmarkViewStored(b *testing.B) {
	rec, err := AppendStored(nil, benchExt(1024))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(rec)))
	for b.Loop() {
		v, _, err := ViewStored(rec)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = v.QueueOffset(), v.StoreTimestamp()
		_ = v.TagsCode()
		if _, ok := v.Property(PropertyKeys); !ok {
			b.Fatal("no keys")
		}
	}
}
