package batch

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/supervisor-dev/supervisor/internal/tensor"
)

// execute runs one batch, answers its requests and tells the loop the
// instance is free again. dispatched is when the batch left the queue.
func (b *Batcher) execute(items []*pending, dispatched time.Time) {
	defer func() { b.finishc <- struct{}{} }()
	rows := 0
	for _, p := range items {
		rows += p.rows
	}
	done := b.running(items)
	t0 := b.clock.Now()
	inputs := items[0].inputs
	if len(items) > 1 {
		inputs = concat(items, rows)
	}
	t1 := b.clock.Now()
	ctx, stop := runContext(items)
	var outs []tensor.Tensor
	var err error
	if ctx.Err() != nil {
		// abandoned while queued: the run is skipped, not started and stopped
		err = fmt.Errorf("the batch was not run: %w", context.Cause(ctx))
	} else {
		outs, err = b.run(ctx, inputs)
	}
	stop()
	t2 := b.clock.Now()
	var parts [][]tensor.Tensor
	if err == nil {
		parts, err = b.split(outs, items, rows)
	}
	t3 := b.clock.Now()
	done()
	compute := [3]time.Duration{t1.Sub(t0), t2.Sub(t1), t3.Sub(t2)}
	b.stats.batch(items, rows, dispatched, err == nil, compute)
	b.observeBatch(items, rows, dispatched, err == nil, compute)
	for i, p := range items {
		if t := p.timing; t != nil { // before done: Submit reads it after
			*t = Timing{Queued: p.enqueued, Dispatched: dispatched, Started: t1, Ended: t2, Requests: len(items), Rows: rows}
		}
		if err != nil {
			p.done <- result{err: err}
		} else {
			p.done <- result{outputs: parts[i]}
		}
	}
}

// running tells Config.Running that items start, and returns what to call
// when their outputs are split.
func (b *Batcher) running(items []*pending) (done func()) {
	if b.cfg.Running == nil {
		return func() {}
	}
	r := Run{IDs: make([]uint64, len(items)), Alone: len(items) == 1 && items[0].alone}
	for i, p := range items {
		r.IDs[i] = p.id
	}
	return b.cfg.Running(r)
}

// concat joins the requests' inputs along dimension 0, with one allocation
// per input. Every request has the same shape key, so only dimension 0
// differs.
func concat(items []*pending, rows int) []tensor.Tensor {
	first := items[0].inputs
	out := make([]tensor.Tensor, len(first))
	for i, t := range first {
		size := 0
		for _, p := range items {
			size += len(p.inputs[i].Data)
		}
		data := make([]byte, 0, size)
		for _, p := range items {
			data = append(data, p.inputs[i].Data...)
		}
		shape := append([]int64{int64(rows)}, t.Shape[1:]...)
		out[i] = tensor.Tensor{Name: t.Name, DType: t.DType, Shape: shape, Data: data}
	}
	return out
}

// split cuts each output back into the requests' rows, in order. With
// batching off the outputs belong to the one request as they are.
func (b *Batcher) split(outs []tensor.Tensor, items []*pending, rows int) ([][]tensor.Tensor, error) {
	if b.cfg.MaxBatchSize == 0 {
		return [][]tensor.Tensor{outs}, nil
	}
	for i := range outs {
		if err := splittable(&outs[i], rows); err != nil {
			return nil, fmt.Errorf("model %q: %w", b.md.Name, err)
		}
	}
	parts := make([][]tensor.Tensor, len(items))
	for i := range parts {
		parts[i] = make([]tensor.Tensor, len(outs))
	}
	for j, o := range outs {
		ends := rowEnds(&o, rows)
		row := 0
		for i, p := range items {
			off, end := 0, ends[row+p.rows-1]
			if row > 0 {
				off = ends[row-1]
			}
			shape := append([]int64{int64(p.rows)}, o.Shape[1:]...)
			parts[i][j] = tensor.Tensor{Name: o.Name, DType: o.DType, Shape: shape, Data: o.Data[off:end:end]}
			row += p.rows
		}
	}
	return parts, nil
}

// splittable checks that an output has one row per batch row.
func splittable(o *tensor.Tensor, rows int) error {
	if len(o.Shape) == 0 || o.Shape[0] != int64(rows) {
		return fmt.Errorf("output %q has shape %s for a batch of %d rows, so it cannot be split back into requests: the model's dimension 0 must be the batch (set max_batch_size to 0)",
			o.Name, tensor.FormatShape(o.Shape), rows)
	}
	if err := o.Check(); err != nil {
		return fmt.Errorf("output of a batch of %d rows: %w", rows, err)
	}
	return nil
}

// rowEnds returns the byte offset in o.Data where each of its rows ends.
// A row of a fixed-size type is len/rows bytes; a row of BYTES is as many
// length-prefixed elements as a row holds, walked one by one (concat
// needed no such walk: the serialised elements of consecutive requests
// are consecutive rows). o has passed splittable, so the walk stays in
// bounds.
func rowEnds(o *tensor.Tensor, rows int) []int {
	ends := make([]int, rows)
	if o.DType != tensor.Bytes {
		rowBytes := len(o.Data) / rows
		for r := range ends {
			ends[r] = (r + 1) * rowBytes
		}
		return ends
	}
	n, _ := tensor.NumElements(o.Shape)
	perRow := int(n) / rows
	off := 0
	for r := range ends {
		for range perRow {
			off += 4 + int(binary.LittleEndian.Uint32(o.Data[off:]))
		}
		ends[r] = off
	}
	return ends
}
