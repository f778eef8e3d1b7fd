package message

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

func storedSeeds(f *testing.F) {
	m := sampleExt()
	b, _ := AppendStored(nil, m)
	f.Add(b)
	m.BornHost = netip.MustParseAddrPort("[2001:db8::1]:4000")
	m.StoreHost = netip.MustParseAddrPort("[::1]:10911")
	b, _ = AppendStored(nil, m)
	f.Add(b)
	m = sampleExt()
	m.Topic = "%DLQ%" + strings.Repeat("x", 195)
	b, _ = AppendStored(nil, m)
	f.Add(b)
	m = sampleExt()
	m.Body, _ = Compress(bytes.Repeat([]byte("zz"), 500), 5)
	m.SysFlag = SysFlagCompressed
	b, _ = AppendStored(nil, m)
	two, _ := AppendStored(b, sampleExt())
	f.Add(two)
	f.Add(AppendBlank(nil, 64))
	f.Add(make([]byte, 100))
}

var storedErrors = []error{ErrShortBuffer, ErrBadMagic, ErrBlank, ErrBadCRC, ErrCorrupt}

func typedStoredError(err error) bool {
	for _, e := range storedErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// FuzzDecodeStored: no panic, typed errors, n within the input, and
// decode(encode(x)) == x for every record that decodes.
func FuzzDecodeStored(f *testing.F) {
	storedSeeds(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, opt := range []DecodeOptions{{VerifyCRC: true, Decompress: true, MaxDecompressedSize: 1 << 20}, {SkipBody: true}} {
			m, n, err := DecodeStored(b, opt)
			if err != nil {
				if m != nil || !typedStoredError(err) {
					t.Fatalf("err %v with message %v", err, m != nil)
				}
				if errors.Is(err, ErrBlank) && n < BlankHeaderSize {
					t.Fatalf("blank of size %d", n)
				}
				continue
			}
			if n > len(b) || n < MinStoredSize || int(m.StoreSize) != n {
				t.Fatalf("n = %d, StoreSize %d, input %d", n, m.StoreSize, len(b))
			}
		}
		// Split decoding must agree with whole decoding (DecodeStoredAll).
		all, allErr := DecodeStoredAll(b, DecodeOptions{})
		owned, ownedErr := DecodeStoredAllOwned(append([]byte(nil), b...), DecodeOptions{})
		if len(owned) != len(all) || (allErr == nil) != (ownedErr == nil) {
			t.Fatalf("DecodeStoredAllOwned: %d messages, %v; DecodeStoredAll: %d, %v", len(owned), ownedErr, len(all), allErr)
		}
		// A reused scratch decodes the same as fresh structs, also after a
		// decode with bodies left a previous record in it.
		scratch := &ExtScratch{}
		if _, err := DecodeStoredAllOwnedScratch(append([]byte(nil), b...), DecodeOptions{}, scratch); (err == nil) != (allErr == nil) {
			t.Fatalf("scratch decode: %v; DecodeStoredAll: %v", err, allErr)
		}
		for _, opt := range []DecodeOptions{{SkipBody: true}, {}} {
			fresh, ferr := DecodeStoredAllOwned(append([]byte(nil), b...), opt)
			reused, rerr := DecodeStoredAllOwnedScratch(append([]byte(nil), b...), opt, scratch)
			if len(fresh) != len(reused) || (ferr == nil) != (rerr == nil) {
				t.Fatalf("scratch decode %+v: %d messages, %v; fresh: %d, %v", opt, len(reused), rerr, len(fresh), ferr)
			}
			for i := range fresh {
				if !reflect.DeepEqual(fresh[i], reused[i]) {
					t.Fatalf("scratch decode %+v: record %d differs", opt, i)
				}
			}
		}

		m, n, err := DecodeStored(b, DecodeOptions{})
		if err != nil {
			if len(all) != 0 {
				t.Fatalf("DecodeStoredAll decoded what DecodeStored rejected: %v", err)
			}
			return
		}
		if len(all) == 0 || all[0].CommitLogOffset != m.CommitLogOffset || !bytes.Equal(all[0].Body, m.Body) {
			t.Fatalf("DecodeStoredAll disagrees with DecodeStored")
		}
		// A prefix of the input (a partial read) holds the record iff it is
		// at least n long; otherwise it is a torn tail, never corruption.
		half := b[:len(b)/2]
		if hm, hn, herr := DecodeStored(half, DecodeOptions{}); len(half) >= n {
			if herr != nil || hn != n || hm.CommitLogOffset != m.CommitLogOffset {
				t.Fatalf("prefix of %d bytes: %d, %v", len(half), hn, herr)
			}
		} else if !errors.Is(herr, ErrShortBuffer) {
			t.Fatalf("prefix of %d bytes (record %d): %v, want ErrShortBuffer", len(half), n, herr)
		}
		rec := b[:n]
		v, vn, err := ViewStored(b)
		if err != nil || vn != n {
			t.Fatalf("ViewStored disagrees with DecodeStored: %d, %v", vn, err)
		}
		checkViewMatches(t, v, m)
		sysFlag := m.SysFlag
		v2 := binary.BigEndian.Uint32(rec[OffsetMagic:]) == MagicV2
		mapped := m.BornHost.Addr().Is4In6() || m.StoreHost.Addr().Is4In6()
		canonical := !mapped && v2 == (len(m.Topic) > MaxTopicSizeV1) && (m.BodyCRC != 0 || BodyCRC(m.Body) == 0)
		if canonical {
			propsLen := propsLenFromEnd(rec, sysFlag, v2)
			raw := string(rec[n-propsLen:])
			again, err := AppendStoredRawProperties(nil, m, raw)
			if err != nil || !bytes.Equal(again, rec) {
				t.Fatalf("re-encoding differs (%v):\n got %X\nwant %X", err, again, rec)
			}
		}
		enc, err := AppendStored(nil, m)
		if err != nil {
			t.Fatalf("re-encode decoded message: %v", err)
		}
		m2, _, err := DecodeStored(enc, DecodeOptions{VerifyCRC: m.BodyCRC == BodyCRC(m.Body)})
		if err != nil {
			t.Fatalf("decode re-encoded: %v", err)
		}
		if m2.Topic != m.Topic || m2.QueueOffset != m.QueueOffset || m2.StoreTimestamp != m.StoreTimestamp ||
			m2.PreparedTransactionOffset != m.PreparedTransactionOffset || !bytes.Equal(m2.Body, m.Body) ||
			!maps.Equal(m2.Properties, m.Properties) || m2.StoreHost.Port() != m.StoreHost.Port() {
			t.Fatalf("decode(encode(x)) != x:\n%+v\n%+v", m2, m)
		}
	})
}

// propsLenFromEnd returns the properties length of a valid record, found by
// walking the fields (the length prefix sits just before the properties).
func propsLenFromEnd(rec []byte, sysFlag int32, v2 bool) int {
	pos := BodyLengthOffset(sysFlag)
	bodyLen := int(binary.BigEndian.Uint32(rec[pos:]))
	pos += 4 + bodyLen
	var topicLen int
	if v2 {
		topicLen = int(binary.BigEndian.Uint16(rec[pos:]))
		pos += 2
	} else {
		topicLen = int(rec[pos])
		pos++
	}
	pos += topicLen
	return int(binary.BigEndian.Uint16(rec[pos:]))
}

func TestPropsLenFromEnd(t *testing.T) {
	rec, _ := AppendStored(nil, sampleExt())
	if got := propsLenFromEnd(rec, 0, false); got != 10 {
		t.Fatalf("propsLenFromEnd = %d, want 10", got)
	}
}
