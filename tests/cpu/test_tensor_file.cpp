// The reference-tensor reader (models/tensor_file.h): files written here byte by byte
// round-trip for every dtype (f16 and bf16 bit patterns included), and each malformed
// file is refused with UsageError "<name>: <what>" on one line.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "models/tensor_file.h"

namespace gpuvs::models {
namespace {

using ojson = nlohmann::ordered_json;

template <typename T>
std::string bytes_of(std::initializer_list<T> values) {
  std::string out(values.size() * sizeof(T), '\0');
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

// Builds a file: tensors are appended to the data in the order added.
struct Builder {
  ojson header = ojson::object();
  std::string data;

  Builder() { header["__metadata__"] = {{"format", "gpuvs.ref"}, {"version", "1"}}; }

  Builder& add(const std::string& name, const std::string& dtype, std::vector<int64_t> shape,
               const std::string& raw) {
    header[name] = {{"dtype", dtype},
                    {"shape", shape},
                    {"data_offsets", {data.size(), data.size() + raw.size()}}};
    data += raw;
    return *this;
  }

  // The file from a header text (for headers no JSON library would write).
  static std::string file(const std::string& header_text, const std::string& data) {
    const uint64_t n = header_text.size();
    std::string out(8, '\0');
    std::memcpy(out.data(), &n, 8);
    return out + header_text + data;
  }

  std::string file() const { return file(header.dump(), data); }
};

// parse_tensor_file must refuse `bytes` with a one-line UsageError that starts with
// "ref.bin: " and contains `part`.
void expect_refused(const std::string& bytes, const std::string& part) {
  try {
    parse_tensor_file(bytes, "ref.bin");
    ADD_FAILURE() << "accepted, expected a message with: " << part;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::kUsage);
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("ref.bin: ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_NE(msg.find(part), std::string::npos) << "message: " << msg << "\nexpected: " << part;
  }
}

// A valid file with one F32 tensor "w" of shape (2, 2), header edited by `edit`.
std::string edited(const std::function<void(ojson&)>& edit, const std::string& data = "") {
  Builder b;
  b.add("w", "F32", {2, 2}, bytes_of<float>({1, 2, 3, 4}));
  edit(b.header);
  return Builder::file(b.header.dump(), data.empty() ? b.data : data);
}

TEST(TensorFile, RoundTripsEveryDtype) {
  Builder b;
  b.add("f32", "F32", {2, 3}, bytes_of<float>({1.5f, -2.0f, 0.0f, 3.25e-20f, 1e30f, -0.0f}));
  // binary16: 1, -2, 65504 (largest), 2^-24 (smallest subnormal), 2^-14 (smallest
  // normal), 0.333251953125 (0x3555).
  b.add("f16", "F16", {6}, bytes_of<uint16_t>({0x3C00, 0xC000, 0x7BFF, 0x0001, 0x0400, 0x3555}));
  // bfloat16: 1, -3.140625 (0xC049), 2^-133 (0x0001, subnormal), 3.3895e38 (0x7F7F).
  b.add("bf16", "BF16", {2, 2}, bytes_of<uint16_t>({0x3F80, 0xC049, 0x0001, 0x7F7F}));
  b.add("labels", "I64", {3}, bytes_of<int64_t>({0, 999, 16777216}));
  b.add("ids", "I32", {2}, bytes_of<int32_t>({-5, 30521}));
  b.add("loss", "F32", {}, bytes_of<float>({6.9f}));
  b.add("empty", "F32", {0, 4}, "");
  b.header["__metadata__"]["model"] = "resnet50";

  const TensorFile f = parse_tensor_file(b.file(), "ref.bin");
  EXPECT_EQ(f.name, "ref.bin");
  EXPECT_EQ(f.metadata.at("model"), "resnet50");
  EXPECT_EQ(f.metadata.at("format"), "gpuvs.ref");
  EXPECT_EQ(f.tensors.size(), 7u);

  EXPECT_EQ(f.at("f32").shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(f.at("f32").data, (std::vector<float>{1.5f, -2.0f, 0.0f, 3.25e-20f, 1e30f, -0.0f}));
  EXPECT_TRUE(std::signbit(f.at("f32").data[5]));
  EXPECT_EQ(f.at("f16").data, (std::vector<float>{1.0f, -2.0f, 65504.0f, std::ldexp(1.0f, -24),
                                                  std::ldexp(1.0f, -14), 0.333251953125f}));
  EXPECT_EQ(f.at("bf16").shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(f.at("bf16").data,
            (std::vector<float>{1.0f, -3.140625f, std::ldexp(1.0f, -133), 3.38953139e38f}));
  EXPECT_EQ(f.at("labels").data, (std::vector<float>{0.0f, 999.0f, 16777216.0f}));
  EXPECT_EQ(f.at("ids").data, (std::vector<float>{-5.0f, 30521.0f}));
  EXPECT_TRUE(f.at("loss").shape.empty());
  EXPECT_EQ(f.at("loss").numel(), 1);
  EXPECT_EQ(f.at("loss").data, (std::vector<float>{6.9f}));
  EXPECT_EQ(f.at("empty").numel(), 0);
  EXPECT_TRUE(f.at("empty").data.empty());
  EXPECT_TRUE(f.contains("labels"));
  EXPECT_FALSE(f.contains("grad/fc.weight"));
}

TEST(TensorFile, HalfConversionCoversSpecialValues) {
  EXPECT_EQ(half_to_float(0x0000), 0.0f);
  EXPECT_TRUE(std::signbit(half_to_float(0x8000)));
  EXPECT_EQ(half_to_float(0x03FF), std::ldexp(1023.0f, -24));  // largest subnormal
  EXPECT_EQ(half_to_float(0x7C00), std::numeric_limits<float>::infinity());
  EXPECT_EQ(half_to_float(0xFC00), -std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(half_to_float(0x7E00)));
  EXPECT_TRUE(std::isnan(bfloat16_to_float(0x7FC0)));
  EXPECT_EQ(bfloat16_to_float(0xFF80), -std::numeric_limits<float>::infinity());
}

// OCP E4M3 ("FN"): bias 7, no infinities, one NaN per sign, 448 the largest finite.
TEST(TensorFile, E4m3ConversionCoversTheFormat) {
  EXPECT_EQ(e4m3_to_float(0x00), 0.0f);
  EXPECT_TRUE(std::signbit(e4m3_to_float(0x80)));
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));  // smallest subnormal
  EXPECT_EQ(e4m3_to_float(0x07), std::ldexp(7.0f, -9));  // largest subnormal
  EXPECT_EQ(e4m3_to_float(0x08), std::ldexp(1.0f, -6));  // smallest normal
  EXPECT_EQ(e4m3_to_float(0x38), 1.0f);
  EXPECT_EQ(e4m3_to_float(0x39), 1.125f);
  EXPECT_EQ(e4m3_to_float(0xC0), -2.0f);
  EXPECT_EQ(e4m3_to_float(0x7E), 448.0f);
  EXPECT_EQ(e4m3_to_float(0xFE), -448.0f);
  EXPECT_TRUE(std::isnan(e4m3_to_float(0x7F)));
  EXPECT_TRUE(std::isnan(e4m3_to_float(0xFF)));
  EXPECT_EQ(e4m3_to_float(0x78), 256.0f);  // S.1111.000 is a number, not infinity
}

TEST(TensorFile, RoundingToE4m3LandsOnTheNearestValue) {
  for (int b = 0; b < 256; ++b) {  // every finite value rounds to itself
    const float v = e4m3_to_float(uint8_t(b));
    if (std::isnan(v)) continue;
    EXPECT_EQ(round_to_e4m3(v), v) << b;
  }
  EXPECT_EQ(round_to_e4m3(1.06f), 1.0f);
  EXPECT_EQ(round_to_e4m3(1.07f), 1.125f);
  EXPECT_EQ(round_to_e4m3(1.0625f), 1.0f);   // a tie: to the even mantissa
  EXPECT_EQ(round_to_e4m3(1.1875f), 1.25f);  // a tie: to the even mantissa
  EXPECT_EQ(round_to_e4m3(-3.3f), -3.25f);
  EXPECT_EQ(round_to_e4m3(1000.0f), 448.0f);  // saturating
  EXPECT_EQ(round_to_e4m3(-460.0f), -448.0f);
  EXPECT_EQ(round_to_e4m3(std::ldexp(1.4f, -9)), std::ldexp(1.0f, -9));  // subnormal
  EXPECT_EQ(round_to_e4m3(std::ldexp(1.0f, -11)), 0.0f);
  EXPECT_TRUE(std::isnan(round_to_e4m3(std::nanf(""))));
}

TEST(TensorFile, HeaderPaddedWithSpacesAndUnorderedOffsetsAreFine) {
  // safetensors pads the header with spaces to a multiple of 8; offsets need not
  // follow the header's order.
  const std::string a = bytes_of<float>({1, 2});
  const std::string b = bytes_of<float>({3});
  ojson h;
  h["__metadata__"] = {{"format", "gpuvs.ref"}, {"version", "1"}};
  h["a"] = {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {4, 12}}};
  h["b"] = {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0, 4}}};
  const TensorFile f = parse_tensor_file(Builder::file(h.dump() + "     ", b + a), "ref.bin");
  EXPECT_EQ(f.at("a").data, (std::vector<float>{1, 2}));
  EXPECT_EQ(f.at("b").data, (std::vector<float>{3}));
}

TEST(TensorFile, LoadsFromDiskAndNamesMissingFiles) {
  const auto path = std::filesystem::temp_directory_path() / "gpuvs_test_tensor_file.bin";
  Builder b;
  b.add("x", "F32", {1}, bytes_of<float>({42}));
  {
    std::ofstream out(path, std::ios::binary);
    const std::string bytes = b.file();
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  EXPECT_EQ(load_tensor_file(path).at("x").data, (std::vector<float>{42}));
  try {
    (void)load_tensor_file(path).at("y");
    ADD_FAILURE() << "a missing tensor was found";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + ": no tensor \"y\"");
  }
  std::filesystem::remove(path);
  try {
    load_tensor_file(path);
    ADD_FAILURE() << "a missing file was read";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path.string() + ": cannot open", 0), 0u) << e.what();
  }
  const auto dir = std::filesystem::temp_directory_path();
  try {
    load_tensor_file(dir);
    ADD_FAILURE() << "a directory was read";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(dir.string() + ": cannot", 0), 0u) << e.what();
  }
}

TEST(TensorFile, RefusesBadHeaderLengths) {
  expect_refused("", "0 bytes, too short");
  expect_refused(std::string("\x05\0\0", 3), "too short");
  expect_refused(Builder::file("{}", "").substr(0, 9), "reaches past the end of the file");
  std::string huge(8, '\0');
  const uint64_t n = uint64_t{1} << 62;
  std::memcpy(huge.data(), &n, 8);
  expect_refused(huge + "{}", "header length 4611686018427387904 is outside 2..100000000");
  expect_refused(Builder::file("{", ""), "header length 1 is outside");
}

TEST(TensorFile, RefusesBadJson) {
  expect_refused(Builder::file("{\"a\": nope}", ""), "header is not valid JSON");
  expect_refused(Builder::file("[1, 2]", ""), "header is a JSON array, not an object");
  expect_refused(Builder::file("{\"a\":{\"b\":[[1]]}}", ""), "nests deeper than 3 levels");
  expect_refused(Builder::file(std::string("{\"a\"\0:1}", 9), ""), "not valid JSON");
  expect_refused(Builder::file("{\"x\":1,\"x\":2}", ""), "the key \"x\" twice");
  // Bytes that are not UTF-8 and a newline stay out of the one-line message.
  expect_refused(Builder::file("{\"\xff\n\": 1}", ""), "not valid JSON");
}

TEST(TensorFile, RefusesForeignAndNewerFiles) {
  expect_refused(edited([](ojson& h) { h.erase("__metadata__"); }),
                 "not a gpuvs reference file (no \"__metadata__\"");
  expect_refused(edited([](ojson& h) {
                   h["__metadata__"] = {{"format", "pt"}};
                 }),
                 "format is \"pt\", not \"gpuvs.ref\"");
  expect_refused(edited([](ojson& h) { h["__metadata__"].erase("format"); }), "format is missing");
  expect_refused(edited([](ojson& h) { h["__metadata__"].erase("version"); }),
                 "\"__metadata__\" has no \"version\"");
  expect_refused(edited([](ojson& h) { h["__metadata__"]["version"] = "2"; }),
                 "version \"2\" is not supported");
  expect_refused(edited([](ojson& h) { h["__metadata__"]["batch"] = 16; }),
                 "value \"batch\" is a JSON number, not a string");
  expect_refused(edited([](ojson& h) { h["__metadata__"] = "x"; }),
                 "\"__metadata__\" is a JSON string, not an object");
}

TEST(TensorFile, RefusesBadEntries) {
  expect_refused(edited([](ojson& h) { h["w"] = 3; }), "tensor \"w\" is a JSON number");
  expect_refused(edited([](ojson& h) { h["w"]["extra"] = 1; }), "unknown field \"extra\"");
  expect_refused(edited([](ojson& h) { h["w"].erase("dtype"); }), "tensor \"w\" has no \"dtype\"");
  expect_refused(edited([](ojson& h) { h["w"].erase("shape"); }), "has no \"shape\"");
  expect_refused(edited([](ojson& h) { h["w"].erase("data_offsets"); }), "has no \"data_offsets\"");
  expect_refused(edited([](ojson& h) { h["w"]["dtype"] = 4; }), "\"dtype\" is not a string");
  expect_refused(edited([](ojson& h) { h["w"]["dtype"] = "F64"; }),
                 "dtype \"F64\" is not supported");
  expect_refused(edited([](ojson& h) { h["w"]["shape"] = 4; }), "\"shape\" is not an array");
  expect_refused(edited([](ojson& h) {
                   h["w"]["shape"] = {2, -2};
                 }),
                 "shape[1] is -2, not a non-negative integer");
  expect_refused(edited([](ojson& h) {
                   h["w"]["shape"] = {2, 2.0};
                 }),
                 "shape[1] is 2.0, not a non-negative integer");
  expect_refused(edited([](ojson& h) { h["w"]["shape"] = {1, 1, 1, 1, 1, 1, 1, 1, 4}; }),
                 "9 dimensions, more than 8");
  expect_refused(edited([](ojson& h) {
                   h["w"]["shape"] = {uint64_t{1} << 40, uint64_t{1} << 40};
                 }),
                 "shape has too many elements");
  // After a zero dimension the product is 0, but a dimension beyond int64 is refused.
  expect_refused(edited([](ojson& h) {
                   h["w"]["shape"] = {uint64_t{0}, ~uint64_t{0}};
                 }),
                 "shape has too many elements");
  expect_refused(edited([](ojson& h) { h["w"]["data_offsets"] = {0}; }),
                 "\"data_offsets\" is not an array of two integers");
  expect_refused(edited([](ojson& h) {
                   h["w"]["data_offsets"] = {8, 4};
                 }),
                 "data_offsets [8, 4] end before they begin");
  expect_refused(edited([](ojson& h) {
                   h["w"]["data_offsets"] = {4, 20};
                 }),
                 "data_offsets [4, 20] reach past the data (16 bytes)");
  expect_refused(edited([](ojson& h) { h["w"]["shape"] = {3}; }),
                 "16 bytes for 3 elements of F32 (12 expected)");
  expect_refused(edited([](ojson& h) { h["w"]["dtype"] = "F16"; }),
                 "16 bytes for 4 elements of F16 (8 expected)");
  expect_refused(edited([](ojson& h) {
                   h[""] = {{"dtype", "F32"}, {"shape", ojson::array()}, {"data_offsets", {0, 4}}};
                 }),
                 "a tensor has an empty name");
}

TEST(TensorFile, RefusesOverlapsAndBadValues) {
  expect_refused(edited([](ojson& h) {
                   h["v"] = {{"dtype", "F32"}, {"shape", {2}}, {"data_offsets", {8, 16}}};
                 }),
                 "tensor \"w\" and tensor \"v\" overlap (bytes [0, 16) and [8, 16))");
  // A tensor name with a newline is quoted with the newline escaped.
  expect_refused(edited([](ojson& h) {
                   h["a\nb"] = {{"dtype", "F32"}, {"shape", {1}}, {"data_offsets", {0, 4}}};
                 }),
                 "tensor \"a\\nb\" and tensor \"w\" overlap");

  Builder nan;
  nan.add("x", "F32", {2}, bytes_of<float>({1, std::numeric_limits<float>::quiet_NaN()}));
  expect_refused(nan.file(), "tensor \"x\": element 1 is not finite");
  Builder inf;
  inf.add("h", "F16", {1}, bytes_of<uint16_t>({0x7C00}));
  expect_refused(inf.file(), "tensor \"h\": element 0 is not finite");
  Builder big;
  big.add("labels", "I64", {2}, bytes_of<int64_t>({3, 16777217}));
  expect_refused(big.file(), "element 1 (16777217) does not fit a float exactly");
  Builder neg;
  neg.add("ids", "I32", {1}, bytes_of<int32_t>({std::numeric_limits<int32_t>::min()}));
  expect_refused(neg.file(), "element 0 (-2147483648) does not fit a float exactly");
}

}  // namespace
}  // namespace gpuvs::models
