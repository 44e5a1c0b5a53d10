// BERT-large's encoder dense layers as the steps call them: the storage-type
// DenseLayer, or the FP8 Fp8Linear with its profile regions.
#include "models/bert/bert.h"

namespace gpuvs::models::bert {

DenseLayer& BertLarge::dense(EncoderDense which) const {
  DenseLayer* const lin[kEncoderDenseCount] = {qkv_.get(), attn_out_.get(), ffn1_.get(),
                                               ffn2_.get()};
  return *lin[dense_index(which)];
}

void BertLarge::dense_forward(EncoderDense which, int l, const void* x, int64_t w_off,
                              int64_t b_off, void* y, bool cast_done) {
  if (!fp8_) {
    dense(which).forward(x, param(w_off), param(b_off), y, ws(), stream_.get());
    return;
  }
  const DenseRegions& r = kDenseRegions[0][dense_index(which)];
  fp8_lin_[dense_index(which)]->forward(l, x, param(w_off), param(b_off), y, ws(), stream_.get(),
                                        {&timer_, r.cast, r.gemm}, cast_done);
  timer_.mark(r.rest, stream_.get());
}

void BertLarge::dense_backward(const DenseBackward& a) {
  cudaStream_t s = stream_.get();
  const float beta = a.accumulate ? 1.0f : 0.0f;
  if (fp8_) {
    const DenseRegions& r = kDenseRegions[1][dense_index(a.which)];
    Fp8Backward b;
    b.layer = a.layer;
    b.x = a.x;
    b.w16 = param(a.w_off);
    b.dy = a.dy;
    b.dx = a.dx;
    b.beta_dx = a.beta_dx;
    b.dw = grad(a.w_off);
    b.beta_dw = beta;
    b.ws = ws();
    b.marks = {&timer_, r.cast, r.gemm};
    b.dy_cast_done = a.cast_done;
    fp8_lin_[dense_index(a.which)]->backward(b, s);
    timer_.mark(r.rest, s);
    return;
  }
  DenseLayer& d = dense(a.which);
  d.backward_weight(a.x, a.dy, grad(a.w_off), beta, ws(), s);
  d.backward_data(a.dy, param(a.w_off), a.dx, a.beta_dx, a.beta_dx != 0.0f ? a.dx : nullptr, ws(),
                  s);
}

}  // namespace gpuvs::models::bert
