package protocol

import (
	"slices"
	"testing"
)

func TestDeleteExt(t *testing.T) {
	tests := []struct {
		name string
		ext  []string
		key  string
		want []string
	}{
		{"middle", []string{"a", "1", "l", "0", "m", "x"}, "l", []string{"a", "1", "m", "x"}},
		{"last", []string{"a", "1", "l", "0"}, "l", []string{"a", "1"}},
		{"absent", []string{"a", "1"}, "l", []string{"a", "1"}},
		{"a value equal to the key is not a key", []string{"a", "l", "b", "2"}, "l", []string{"a", "l", "b", "2"}},
		{"empty", nil, "l", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DeleteExt(slices.Clone(tc.ext), tc.key); !slices.Equal(got, tc.want) {
				t.Fatalf("DeleteExt(%q, %q) = %q, want %q", tc.ext, tc.key, got, tc.want)
			}
		})
	}
	for _, v2 := range []bool{false, true} {
		h := SendMessageRequestHeader{MaxReconsumeTimes: 0}
		ext := DeleteExt(AppendSendHeader(nil, &h, v2), SendHeaderMaxReconsumeTimesKey(v2))
		if len(ext) != 26 {
			t.Fatalf("v2=%v: %d ext entries after dropping maxReconsumeTimes, want 26", v2, len(ext))
		}
		var back SendMessageRequestHeader
		m := map[string]string{}
		for i := 0; i < len(ext); i += 2 {
			m[ext[i]] = ext[i+1]
		}
		if err := DecodeSendHeader(m, &back, v2); err != nil || back != h {
			t.Fatalf("v2=%v: decode after drop = %+v, %v; want %+v", v2, back, err, h)
		}
	}
}
