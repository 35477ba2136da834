package edges

import "sort"

// LineMap numbers a text input's rows by their lines: block k's rows start
// at row firstRow on line firstLine, and gaps lists, for each blank or
// comment line among them, how many of the block's rows come before it. It
// costs a few words per block and one per comment line, not one per row.
type LineMap struct{ blocks []lineBlock }

type lineBlock struct {
	firstRow, firstLine int64
	gaps                []int32
}

// Line is the line of row, 0 for a row before the first.
func (m *LineMap) Line(row int64) int64 {
	k := sort.Search(len(m.blocks), func(k int) bool { return m.blocks[k].firstRow > row }) - 1
	if k < 0 || row < 0 {
		return 0
	}
	b := &m.blocks[k]
	r := row - b.firstRow
	before := sort.Search(len(b.gaps), func(i int) bool { return int64(b.gaps[i]) > r })
	return b.firstLine + r + int64(before)
}

// AddBlock numbers the rows of a block of text lines: the first, row
// firstRow, is on line firstLine, and gaps lists, for each blank or comment
// line among them, how many of the block's rows come before it.
func (m *LineMap) AddBlock(firstRow, firstLine int64, gaps []int32) {
	m.blocks = append(m.blocks, lineBlock{firstRow: firstRow, firstLine: firstLine, gaps: gaps})
}

// Note records that row starts on line. Rows follow one another a line
// each; where one starts further down (after a record with quoted line
// breaks, or blank lines, which encoding/csv passes over) the lines in
// between are gaps, so that LineOf names the line a later stage's error
// (a negative weight, say) is on, as the reader's own errors do.
func (m *LineMap) Note(row, line int64) {
	if len(m.blocks) == 0 || row-m.blocks[len(m.blocks)-1].firstRow >= 1<<30 {
		m.blocks = append(m.blocks, lineBlock{firstRow: row, firstLine: line})
		return
	}
	b := &m.blocks[len(m.blocks)-1]
	for next := b.firstLine + (row - b.firstRow) + int64(len(b.gaps)); next < line; next++ {
		b.gaps = append(b.gaps, int32(row-b.firstRow))
	}
}
