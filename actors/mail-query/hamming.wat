;; The sign-bit index's scan (actors/mail-query/vector-index.ts): the
;; Hamming distance of every in-scope row's signature to the query's with
;; their histogram (`distances`), then the rows under the cut (`select`),
;; then their dot products with the query by two bits a component
;; (`twoBitDots`).
;; One linear memory, laid out by the caller: the rows (`stride` bytes each:
;; the sign bits, `length` bytes, a multiple of 8, then as many magnitude
;; bits), the query's signature, the histogram (u32 per distance), the
;; distances (u16 per row; 0xffff: out of scope, left as is), the rows
;; selected (u32 each), the query's tables (f64, 256 a byte position, two
;; sets), the selected rows' scores (f64 each).
;; i64.popcnt is the processor's own population count where it has one.
(module
  (memory (export "memory") 1)
  (func (export "distances")
    (param $sig i32) (param $rows i32) (param $stride i32) (param $length i32) (param $query i32) (param $out i32) (param $histogram i32)
    (local $k i32) (local $d i32) (local $slot i32)
    (if (i32.eqz (local.get $rows)) (then (return)))
    (loop $row
      (if (i32.ne (i32.load16_u (local.get $out)) (i32.const 0xffff))
        (then
          (local.set $d (i32.const 0))
          (local.set $k (i32.const 0))
          (loop $word
            (local.set $d
              (i32.add (local.get $d)
                (i32.wrap_i64
                  (i64.popcnt
                    (i64.xor
                      (i64.load (i32.add (local.get $sig) (local.get $k)))
                      (i64.load (i32.add (local.get $query) (local.get $k))))))))
            (local.set $k (i32.add (local.get $k) (i32.const 8)))
            (br_if $word (i32.lt_u (local.get $k) (local.get $length))))
          (i32.store16 (local.get $out) (local.get $d))
          (local.set $slot (i32.add (local.get $histogram) (i32.shl (local.get $d) (i32.const 2))))
          (i32.store (local.get $slot) (i32.add (i32.load (local.get $slot)) (i32.const 1)))))
      (local.set $sig (i32.add (local.get $sig) (local.get $stride)))
      (local.set $out (i32.add (local.get $out) (i32.const 2)))
      (local.set $rows (i32.sub (local.get $rows) (i32.const 1)))
      (br_if $row (local.get $rows))))
  ;; Row numbers, in order, of the rows nearer than `cut` and the first
  ;; `atCut` at it, at most `wide`, written from `dest`; answers how many.
  (func (export "select")
    (param $out i32) (param $rows i32) (param $cut i32) (param $atCut i32) (param $wide i32) (param $dest i32) (result i32)
    (local $r i32) (local $n i32) (local $d i32)
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $r) (local.get $rows)))
        (br_if $done (i32.ge_u (local.get $n) (local.get $wide)))
        (local.set $d (i32.load16_u (i32.add (local.get $out) (i32.shl (local.get $r) (i32.const 1)))))
        (if (i32.or
              (i32.lt_u (local.get $d) (local.get $cut))
              (i32.and (i32.eq (local.get $d) (local.get $cut)) (i32.gt_s (local.get $atCut) (i32.const 0))))
          (then
            (if (i32.eq (local.get $d) (local.get $cut))
              (then (local.set $atCut (i32.sub (local.get $atCut) (i32.const 1)))))
            (i32.store (i32.add (local.get $dest) (i32.shl (local.get $n) (i32.const 2))) (local.get $r))
            (local.set $n (i32.add (local.get $n) (i32.const 1)))))
        (local.set $r (i32.add (local.get $r) (i32.const 1)))
        (br $each)))
    (local.get $n))

  ;; For each of `n` rows whose numbers (u32) are listed from `rowsAt`, by
  ;; byte position p of its `length` sign bytes s and magnitude bytes m (the
  ;; `length` bytes after them): the f64 at `signs` + 2048 p + 8 s, plus the
  ;; f64 at `sums` + 2048 p + 8 (m and not s), minus the one at 8 (m and s);
  ;; summed, written as f64 from `outAt` (vector-index.ts `queryTables`).
  (func (export "twoBitDots")
    (param $sig i32) (param $rowsAt i32) (param $n i32) (param $stride i32) (param $length i32)
    (param $signs i32) (param $sums i32) (param $outAt i32)
    (local $at i32) (local $b i32) (local $s i32) (local $m i32) (local $p i32) (local $sum f64)
    (if (i32.eqz (local.get $n)) (then (return)))
    (loop $row
      (local.set $at (i32.add (local.get $sig) (i32.mul (i32.load (local.get $rowsAt)) (local.get $stride))))
      (local.set $sum (f64.const 0))
      (local.set $b (i32.const 0))
      (local.set $p (i32.const 0))
      (loop $byte
        (local.set $s (i32.load8_u (i32.add (local.get $at) (local.get $b))))
        (local.set $m (i32.load8_u (i32.add (i32.add (local.get $at) (local.get $length)) (local.get $b))))
        (local.set $sum
          (f64.add (local.get $sum)
            (f64.sub
              (f64.add
                (f64.load (i32.add (i32.add (local.get $signs) (local.get $p)) (i32.shl (local.get $s) (i32.const 3))))
                (f64.load (i32.add (i32.add (local.get $sums) (local.get $p))
                  (i32.shl (i32.and (local.get $m) (i32.xor (local.get $s) (i32.const 0xff))) (i32.const 3)))))
              (f64.load (i32.add (i32.add (local.get $sums) (local.get $p))
                (i32.shl (i32.and (local.get $m) (local.get $s)) (i32.const 3)))))))
        (local.set $p (i32.add (local.get $p) (i32.const 2048)))
        (local.set $b (i32.add (local.get $b) (i32.const 1)))
        (br_if $byte (i32.lt_u (local.get $b) (local.get $length))))
      (f64.store (local.get $outAt) (local.get $sum))
      (local.set $outAt (i32.add (local.get $outAt) (i32.const 8)))
      (local.set $rowsAt (i32.add (local.get $rowsAt) (i32.const 4)))
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (br_if $row (local.get $n))))
)
