package gpu

// Hand-written PTX for the device tests (compute_80, JIT-compiled for the
// GPU at hand, as kernels/ ships its PTX).
const testPTX = `
.version 7.0
.target sm_80
.address_size 64

.visible .global .align 4 .u32 gpipe_counter = 42;

.extern .shared .align 16 .b8 dsmem[];

// noop: launch overhead.
.visible .entry noop()
{
	ret;
}

// axpb_i32: out[i] = a*in[i] + b for i < n.
.visible .entry axpb_i32(
	.param .u64 axpb_i32_out,
	.param .u64 axpb_i32_in,
	.param .u32 axpb_i32_a,
	.param .u32 axpb_i32_b,
	.param .u32 axpb_i32_n
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<10>;
	.reg .b64 %rd<8>;

	ld.param.u64 %rd1, [axpb_i32_out];
	ld.param.u64 %rd2, [axpb_i32_in];
	ld.param.u32 %r1, [axpb_i32_a];
	ld.param.u32 %r2, [axpb_i32_b];
	ld.param.u32 %r3, [axpb_i32_n];
	mov.u32 %r4, %ctaid.x;
	mov.u32 %r5, %ntid.x;
	mov.u32 %r6, %tid.x;
	mad.lo.u32 %r7, %r4, %r5, %r6;
	setp.ge.u32 %p1, %r7, %r3;
	@%p1 bra AXPB_I32_DONE;
	cvta.to.global.u64 %rd3, %rd2;
	cvta.to.global.u64 %rd4, %rd1;
	mul.wide.u32 %rd5, %r7, 4;
	add.s64 %rd6, %rd3, %rd5;
	ld.global.u32 %r8, [%rd6];
	mad.lo.s32 %r9, %r8, %r1, %r2;
	add.s64 %rd7, %rd4, %rd5;
	st.global.u32 [%rd7], %r9;
AXPB_I32_DONE:
	ret;
}

// axpb_f64: out[i] = fma(in[i], a, b) for i < n, with a 64-bit n.
.visible .entry axpb_f64(
	.param .u64 axpb_f64_out,
	.param .u64 axpb_f64_in,
	.param .f64 axpb_f64_a,
	.param .f64 axpb_f64_b,
	.param .u64 axpb_f64_n
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<4>;
	.reg .b64 %rd<11>;
	.reg .f64 %fd<5>;

	ld.param.u64 %rd1, [axpb_f64_out];
	ld.param.u64 %rd2, [axpb_f64_in];
	ld.param.f64 %fd1, [axpb_f64_a];
	ld.param.f64 %fd2, [axpb_f64_b];
	ld.param.u64 %rd3, [axpb_f64_n];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	cvt.u64.u32 %rd5, %r3;
	mad.wide.u32 %rd4, %r1, %r2, %rd5;
	setp.ge.u64 %p1, %rd4, %rd3;
	@%p1 bra AXPB_F64_DONE;
	cvta.to.global.u64 %rd6, %rd2;
	shl.b64 %rd7, %rd4, 3;
	add.s64 %rd8, %rd6, %rd7;
	ld.global.f64 %fd3, [%rd8];
	fma.rn.f64 %fd4, %fd3, %fd1, %fd2;
	cvta.to.global.u64 %rd9, %rd1;
	add.s64 %rd10, %rd9, %rd7;
	st.global.f64 [%rd10], %fd4;
AXPB_F64_DONE:
	ret;
}

// echo_params: writes each parameter, widened to 64 bits, to out[0..9].
// The 4- and 8-byte parameters alternate, so their offsets need padding.
.visible .entry echo_params(
	.param .u64 ep_out,
	.param .u32 ep_i32,
	.param .u64 ep_i64,
	.param .u32 ep_u32,
	.param .f32 ep_f32,
	.param .u64 ep_u64,
	.param .f64 ep_f64,
	.param .u8 ep_u8,
	.param .u16 ep_u16,
	.param .u8 ep_b,
	.param .u64 ep_ptr
)
{
	.reg .b16 %rs<4>;
	.reg .b32 %r<4>;
	.reg .f32 %f<2>;
	.reg .b64 %rd<12>;
	.reg .f64 %fd<2>;

	ld.param.u64 %rd1, [ep_out];
	cvta.to.global.u64 %rd1, %rd1;
	ld.param.s32 %r1, [ep_i32];
	cvt.s64.s32 %rd2, %r1;
	st.global.u64 [%rd1], %rd2;
	ld.param.u64 %rd3, [ep_i64];
	st.global.u64 [%rd1+8], %rd3;
	ld.param.u32 %r2, [ep_u32];
	cvt.u64.u32 %rd4, %r2;
	st.global.u64 [%rd1+16], %rd4;
	ld.param.f32 %f1, [ep_f32];
	mov.b32 %r3, %f1;
	cvt.u64.u32 %rd5, %r3;
	st.global.u64 [%rd1+24], %rd5;
	ld.param.u64 %rd6, [ep_u64];
	st.global.u64 [%rd1+32], %rd6;
	ld.param.f64 %fd1, [ep_f64];
	mov.b64 %rd7, %fd1;
	st.global.u64 [%rd1+40], %rd7;
	ld.param.u8 %rs1, [ep_u8];
	cvt.u64.u16 %rd8, %rs1;
	st.global.u64 [%rd1+48], %rd8;
	ld.param.u16 %rs2, [ep_u16];
	cvt.u64.u16 %rd9, %rs2;
	st.global.u64 [%rd1+56], %rd9;
	ld.param.u8 %rs3, [ep_b];
	cvt.u64.u16 %rd10, %rs3;
	st.global.u64 [%rd1+64], %rd10;
	ld.param.u64 %rd11, [ep_ptr];
	st.global.u64 [%rd1+72], %rd11;
	ret;
}

// echo_struct: out[0..3] = the fields of a struct passed by value,
// {u64 p; s32 n; f32 x; s64 m} (gpu.Args), as u64s: n sign-extended, x's
// bits; then a plain parameter after it.
.visible .entry echo_struct(
	.param .align 8 .b8 es_a[24],
	.param .u64 es_out
)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<6>;

	ld.param.u64 %rd1, [es_out];
	cvta.to.global.u64 %rd1, %rd1;
	ld.param.u64 %rd2, [es_a];
	st.global.u64 [%rd1], %rd2;
	ld.param.s32 %r1, [es_a+8];
	cvt.s64.s32 %rd3, %r1;
	st.global.u64 [%rd1+8], %rd3;
	ld.param.b32 %r2, [es_a+12];
	cvt.u64.u32 %rd4, %r2;
	st.global.u64 [%rd1+16], %rd4;
	ld.param.u64 %rd5, [es_a+16];
	st.global.u64 [%rd1+24], %rd5;
	ret;
}

// smem_probe: the block writes word i of its dynamic shared memory with i,
// for i < words; thread 0 then sums all words into out[0].
.visible .entry smem_probe(
	.param .u64 sp_out,
	.param .u32 sp_words
)
{
	.reg .pred %p<3>;
	.reg .b32 %r<10>;
	.reg .b64 %rd<3>;

	ld.param.u64 %rd1, [sp_out];
	ld.param.u32 %r1, [sp_words];
	mov.u32 %r2, %tid.x;
	mov.u32 %r3, %ntid.x;
	mov.u32 %r4, dsmem;
	mov.u32 %r5, %r2;
SP_FILL:
	setp.ge.u32 %p1, %r5, %r1;
	@%p1 bra SP_FILLED;
	shl.b32 %r6, %r5, 2;
	add.u32 %r7, %r4, %r6;
	st.shared.u32 [%r7], %r5;
	add.u32 %r5, %r5, %r3;
	bra SP_FILL;
SP_FILLED:
	bar.sync 0;
	setp.ne.u32 %p2, %r2, 0;
	@%p2 bra SP_DONE;
	mov.u32 %r8, 0;
	mov.u32 %r5, 0;
SP_SUM:
	setp.ge.u32 %p1, %r5, %r1;
	@%p1 bra SP_SUMMED;
	shl.b32 %r6, %r5, 2;
	add.u32 %r7, %r4, %r6;
	ld.shared.u32 %r9, [%r7];
	add.u32 %r8, %r8, %r9;
	add.u32 %r5, %r5, 1;
	bra SP_SUM;
SP_SUMMED:
	cvta.to.global.u64 %rd2, %rd1;
	st.global.u32 [%rd2], %r8;
SP_DONE:
	ret;
}
`

// brokenPTX uses a register it never declares.
const brokenPTX = `
.version 7.0
.target sm_80
.address_size 64

.visible .entry broken(
	.param .u64 broken_out
)
{
	.reg .b32 %r<2>;
	mov.u32 %r1, %undeclared_register;
	ret;
}
`
