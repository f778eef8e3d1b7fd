package store

import (
	"slices"
	"testing"
)

// fakeRecords is a recordSource whose bounds tests move by hand: maxs are
// the successive answers of maxOffset (the last repeats), mins those of
// minOffset, and readable decides readRecord.
type fakeRecords struct {
	mins, maxs []int64
	readable   func(off int64) bool
}

func popFirst(v *[]int64) int64 {
	x := (*v)[0]
	if len(*v) > 1 {
		*v = (*v)[1:]
	}
	return x
}

func (f *fakeRecords) minOffset() int64 { return popFirst(&f.mins) }
func (f *fakeRecords) maxOffset() int64 { return popFirst(&f.maxs) }
func (f *fakeRecords) readRecord(off, size int64) ([]byte, bool) {
	if f.readable != nil && !f.readable(off) {
		return nil, false
	}
	return []byte("not a stored record"), true
}

// tagsOnly filters by tags code and needs no properties.
type tagsOnly int64

func (f tagsOnly) MatchTagsCode(c int64) bool           { return c != int64(f) }
func (tagsOnly) MatchProperties(map[string]string) bool { return true }
func (tagsOnly) PropertiesFilterless() bool             { return true }

// propsFilter needs each record's properties; fakeRecords' records do not
// decode, so a readable one is filtered out.
type propsFilter struct{}

func (propsFilter) MatchTagsCode(int64) bool               { return true }
func (propsFilter) MatchProperties(map[string]string) bool { return true }

func unit(phy int64, size int32) cqUnit { return cqUnit{PhyOffset: phy, Size: size} }

// TestUnitScanNeverStepsOverUnreadUnits holds GetMessage's first pass to
// its rule: NextBeginOffset (offset + examined) passes only units that
// were picked, filtered out, blank, or whose record is gone; a unit that
// could not be read ends the batch before it. Breaking this rule once made
// readers skip every later unit of a commit-log file (see DESIGN.md and
// TestGetMessageUnderConcurrentPuts).
func TestUnitScanNeverStepsOverUnreadUnits(t *testing.T) {
	blank := cqUnit{PhyOffset: 0, Size: cqBlankUnitSize}
	tests := []struct {
		name       string
		log        fakeRecords
		filter     MessageFilter
		maxPicks   int
		units      []cqUnit
		wantPicked []int64 // queue offsets (the scan starts at 0)
		wantExam   int
		wantUnread bool
		wantStatus GetStatus
	}{
		{name: "all readable", log: fakeRecords{mins: []int64{100}, maxs: []int64{500}},
			units:      []cqUnit{unit(100, 10), unit(110, 10), unit(120, 10)},
			wantPicked: []int64{0, 1, 2}, wantExam: 3, wantStatus: Found},
		{name: "a zero slot ends the batch", log: fakeRecords{mins: []int64{100}, maxs: []int64{500}},
			units:      []cqUnit{unit(100, 10), unit(110, 0), unit(120, 10)},
			wantPicked: []int64{0}, wantExam: 1, wantUnread: true, wantStatus: Found},
		{name: "a zero slot first is not counted", log: fakeRecords{mins: []int64{100}, maxs: []int64{500}},
			units:    []cqUnit{unit(100, 0), unit(110, 10)},
			wantExam: 0, wantUnread: true, wantStatus: NoMatchedMessage},
		{name: "a record past the end ends the batch", log: fakeRecords{mins: []int64{100}, maxs: []int64{500}},
			units:      []cqUnit{unit(100, 10), unit(495, 10), unit(505, 10)},
			wantPicked: []int64{0}, wantExam: 1, wantUnread: true, wantStatus: Found},
		{name: "a record past the snapshot is read again", log: fakeRecords{mins: []int64{100}, maxs: []int64{500, 600}},
			units:      []cqUnit{unit(100, 10), unit(495, 10), unit(505, 10)},
			wantPicked: []int64{0, 1, 2}, wantExam: 3, wantStatus: Found},
		{name: "units of a deleted file are skipped up to the next file", log: fakeRecords{mins: []int64{900}, maxs: []int64{2000}},
			units:      []cqUnit{unit(50, 10), unit(950, 10), unit(1000, 10)},
			wantPicked: []int64{2}, wantExam: 3, wantStatus: Found},
		{name: "only deleted units", log: fakeRecords{mins: []int64{900}, maxs: []int64{2000}},
			units:    []cqUnit{unit(50, 10), unit(60, 10)},
			wantExam: 2, wantStatus: MessageWasRemoving},
		{name: "blank units are stepped over", log: fakeRecords{mins: []int64{100}, maxs: []int64{500}},
			units:      []cqUnit{blank, unit(100, 10), blank},
			wantPicked: []int64{1}, wantExam: 3, wantStatus: Found},
		{name: "tag-filtered units are stepped over", log: fakeRecords{mins: []int64{100}, maxs: []int64{500}},
			filter:     tagsOnly(7),
			units:      []cqUnit{{PhyOffset: 100, Size: 10, TagsCode: 7}, {PhyOffset: 110, Size: 10, TagsCode: 1}},
			wantPicked: []int64{1}, wantExam: 2, wantStatus: Found},
		{name: "an unreadable record for the property filter ends the batch",
			log:    fakeRecords{mins: []int64{100}, maxs: []int64{500}, readable: func(int64) bool { return false }},
			filter: propsFilter{}, units: []cqUnit{unit(100, 10), unit(110, 10)},
			wantExam: 0, wantUnread: true, wantStatus: NoMatchedMessage},
		{name: "a record deleted under the property filter is stepped over",
			log:    fakeRecords{mins: []int64{100, 200}, maxs: []int64{500}, readable: func(off int64) bool { return off >= 200 }},
			filter: propsFilter{}, units: []cqUnit{unit(100, 10)},
			wantExam: 1, wantStatus: NoMatchedMessage},
		{name: "a record the property filter rejects is stepped over", log: fakeRecords{mins: []int64{100}, maxs: []int64{500}},
			filter: propsFilter{}, units: []cqUnit{unit(100, 10), unit(110, 10)},
			wantExam: 2, wantStatus: NoMatchedMessage},
		{name: "a full batch ends without counting the next unit", log: fakeRecords{mins: []int64{100}, maxs: []int64{500}},
			maxPicks:   2,
			units:      []cqUnit{unit(100, 10), unit(110, 10), unit(120, 10)},
			wantPicked: []int64{0, 1}, wantExam: 2, wantStatus: Found},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			maxPicks := tc.maxPicks
			if maxPicks == 0 {
				maxPicks = 32
			}
			log := tc.log
			sc := newUnitScan(&log, tc.filter, maxPicks)
			sc.fileSize, sc.memLimit = 1000, 1<<30
			sc.full = func(_ int64, count int, _ int64, _ bool) bool { return count >= maxPicks }
			for q, u := range tc.units {
				if !sc.step(int64(q), u) {
					break
				}
			}
			var picked []int64
			for _, p := range sc.picked {
				picked = append(picked, p.q)
			}
			if !slices.Equal(picked, tc.wantPicked) {
				t.Errorf("picked %v, want %v", picked, tc.wantPicked)
			}
			if sc.examined != tc.wantExam {
				t.Errorf("examined %d, want %d", sc.examined, tc.wantExam)
			}
			if sc.unreadable != tc.wantUnread {
				t.Errorf("unreadable %v, want %v", sc.unreadable, tc.wantUnread)
			}
			if sc.status != tc.wantStatus {
				t.Errorf("status %v, want %v", sc.status, tc.wantStatus)
			}
		})
	}
}

func TestCheckQueueOffset(t *testing.T) {
	tests := []struct {
		name             string
		offset, min, max int64
		status           GetStatus
		next             int64
		ok               bool
	}{
		{"empty queue", 5, 0, 0, NoMessageInQueue, 0, false},
		{"below min", 1, 3, 10, OffsetTooSmall, 3, false},
		{"at max", 10, 3, 10, OffsetOverflowOne, 10, false},
		{"past max from zero", 12, 0, 10, OffsetOverflowBadly, 10, false},
		{"past max", 12, 3, 10, OffsetOverflowBadly, 10, false},
		{"in range", 5, 3, 10, 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, next, ok := checkQueueOffset(tc.offset, tc.min, tc.max)
			if st != tc.status || next != tc.next || ok != tc.ok {
				t.Fatalf("checkQueueOffset(%d, %d, %d) = %v, %d, %v; want %v, %d, %v",
					tc.offset, tc.min, tc.max, st, next, ok, tc.status, tc.next, tc.ok)
			}
		})
	}
}
