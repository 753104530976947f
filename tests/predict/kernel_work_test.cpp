#include <catch2/catch.hpp>

#include "habitat/predict/kernel_work.hpp"

using namespace habitat;

TEST_CASE("math kernels by name: library GEMMs, convolutions and RNNs, not their pointwise and reduction helpers", "[kernel]") {
  using detail::function_name;
  using detail::is_math_kernel;
  CHECK(function_name("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate<float, float, 32u>(long, long)") ==
        "at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate");
  CHECK(function_name("sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize64x64x32") == "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize64x64x32");
  CHECK(function_name("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4>(Params)") == "cutlass::Kernel2");

  CHECK(is_math_kernel("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_64x64_32x6_nn_align4>(Params)"));
  CHECK(is_math_kernel("nvjet_sm90_hsh_64x32_64x16_1x2_h_bz_NNT"));
  CHECK(is_math_kernel("std::enable_if<!(false), void>::type internal::gemvx::kernel<int, int, float>(cublasGemvParams)"));
  CHECK(is_math_kernel("void cudnn::detail::dgrad_engine<float, 128, 6, 7, 3, 3, 5, false>(int, int)"));
  // cuDNN's LSTM cell backward, cuBLASLt's split-K reduction, cuDNN's wgrad reduction and ATen's layer-norm
  // backward ("mma" inside "Gamma") move data.
  CHECK_FALSE(is_math_kernel("void LSTM_elementWise_bp1<float, float, float>(int, int, float*, float*)"));
  CHECK_FALSE(is_math_kernel("void cublasLt::splitKreduce_kernel<32, 16, int, float, __half, float>(cublasLt::cublasSplitKParams<float>)"));
  CHECK_FALSE(is_math_kernel("void cudnn::cnn::reduce_wgrad_nchw_helper<float, float>(int, int)"));
  CHECK_FALSE(is_math_kernel("void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernelTemplate<float, float, 32u>(long, long)"));
  CHECK_FALSE(is_math_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>(int)"));
}

TEST_CASE("a foreach kernel's tensor lists come from its name where no operation records them", "[predict]") {
  // ATen's functors name the lists they read (Functor<T, depth, r_args_depth, res_arg_index>), else the metadata its depth.
  const std::string ns = "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::";
  CHECK(detail::foreach_lists_read(ns + "TensorListMetadata<1>, at::native::(anonymous namespace)::BinaryOpScalarFunctor<float, 1, 1, 0>, std::multiplies<float>, float>(...)") == 1);
  CHECK(detail::foreach_lists_read(ns + "TensorListMetadata<2>, at::native::(anonymous namespace)::UnaryOpFunctor<float, 2, 1, 1>, at::native::Sqrt<float> >(...)") == 1);
  CHECK(detail::foreach_lists_read(ns + "TensorListMetadata<2>, at::native::(anonymous namespace)::TernaryOpScalarFunctor<float, 2, 2, 0>, at::native::LerpFunctor<float>, float>(...)") == 2);
  CHECK(detail::foreach_lists_read(ns + "TensorListScalarListMetadata<float, 3>, at::native::(anonymous namespace)::PointwiseOpScalarListFunctor<float, 3, 3, 0>, std::divides<float> >(...)") == 3);
  CHECK(detail::foreach_lists_read(ns + "FusedOptimizerTensorListMetadata<4>, FusedAdamMathFunctor<float, 4, ADAM_MODE(0), true> >(...)") == 4);
  CHECK(detail::foreach_lists_read("my_kernel<Functor<float>>") == 0);
  CHECK(detail::foreach_lists_read("") == 0);

  // Without an operation the same kernel gets the bytes its operation would give it (in place: read and written).
  Kernel k;
  k.name = ns + "TensorListMetadata<3>, at::native::(anonymous namespace)::PointwiseOpScalarFunctor<float, 3, 3, 0>, std::multiplies<float>, float>(...)";
  k.grid = {10, 1, 1};
  k.block = {512, 1, 1};
  Operation op;
  op.name = "aten::_foreach_addcmul_";
  op.inputs.resize(3);
  for (auto& t : op.inputs) t.dtype = "TensorList";
  REQUIRE(detail::foreach_bytes(k, &op));
  CHECK(*detail::foreach_bytes(k, nullptr) == Approx(*detail::foreach_bytes(k, &op)));
  CHECK(*detail::foreach_bytes(k, nullptr) == Approx(10 * 65536.0 * 4 * 4));
}
