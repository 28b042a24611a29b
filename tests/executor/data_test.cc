// Training data (executor/data/data.h, tokenizer.h): token file layouts, the
// sequential row layout, the random order, bounds errors, the SentencePiece
// round trip, and bounded memory on huge inputs. Real files in a temporary
// directory; a real spm_train model.
#include "executor/data/data.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "executor/data/tokenizer.h"

namespace pw::exec {
namespace {

namespace fs = std::filesystem;

class TokenDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/pw-data-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string Path(const std::string& name) const { return dir_ + "/" + name; }
  // Writes `tokens` little-endian, `width` bytes each, after `header` bytes.
  std::string WriteTokens(const std::string& name, const std::vector<uint32_t>& tokens, int width,
                          const std::vector<int32_t>& header = {}) {
    std::string bytes;
    if (!header.empty()) {
      std::vector<int32_t> h(256, 0);
      for (size_t i = 0; i < header.size(); ++i) h[i] = header[i];
      for (int32_t v : h)
        for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<char>((static_cast<uint32_t>(v) >> (8 * b)) & 0xFF));
    }
    for (uint32_t t : tokens)
      for (int b = 0; b < width; ++b) bytes.push_back(static_cast<char>((t >> (8 * b)) & 0xFF));
    std::ofstream(Path(name), std::ios::binary) << bytes;
    return Path(name);
  }
  std::string dir_;
};

std::vector<uint32_t> Iota(int n, uint32_t scale = 1) {
  std::vector<uint32_t> v(n);
  for (int i = 0; i < n; ++i) v[i] = static_cast<uint32_t>(i) * scale;
  return v;
}

DataSpec Spec(const std::string& path, const std::string& dtype = "", const std::string& order = "sequential") {
  DataSpec s;
  s.path = path;
  s.token_dtype = dtype;
  s.order = order;
  return s;
}

long RssKiB() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::strtol(line.c_str() + 6, nullptr, 10);
  return -1;
}

// Sequential order, by hand: N = 23 tokens 0..22 (token i has id i), T = 4:
// W = floor(22 / 4) = 5 windows, window w = tokens [4w, 4w+4]. A step of
// G = 3 rows: step 0 = windows 0,1,2; step 1 = windows 3,4,0 (epoch 1 starts
// again at window 0).
TEST_F(TokenDataTest, SequentialRowLayoutMatchesHandComputation) {
  auto ds = TextDataset::FromTokens(Iota(23), 4, 7, "sequential");
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  EXPECT_EQ(ds->num_windows(), 5);
  const TokenBatch b0 = ds->Batch(0, 3);
  const std::vector<int64_t> in0 = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const std::vector<int64_t> tg0 = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
  EXPECT_EQ(b0.inputs, in0);
  EXPECT_EQ(b0.targets, tg0);
  const TokenBatch b1 = ds->Batch(1, 3);
  const std::vector<int64_t> in1 = {12, 13, 14, 15, 16, 17, 18, 19, 0, 1, 2, 3};
  const std::vector<int64_t> tg1 = {13, 14, 15, 16, 17, 18, 19, 20, 1, 2, 3, 4};
  EXPECT_EQ(b1.inputs, in1);
  EXPECT_EQ(b1.targets, tg1);
  // A data-parallel replica's rows are a slice of the global batch.
  const TokenBatch part = ds->Batch(1, 3, 1, 2);
  EXPECT_EQ(part.rows, 2);
  EXPECT_EQ(part.inputs, std::vector<int64_t>(in1.begin() + 4, in1.end()));
  EXPECT_EQ(part.targets, std::vector<int64_t>(tg1.begin() + 4, tg1.end()));
}

// The random order is a permutation of the windows in every epoch (each
// window once), differs between epochs and seeds, and is reproducible.
TEST_F(TokenDataTest, RandomOrderIsAPermutationPerEpoch) {
  for (int n : {1, 2, 3, 7, 64, 100, 1000}) {
    auto ds = TextDataset::FromTokens(Iota(n * 2 + 1), 2, 11, "random");
    ASSERT_TRUE(ds.ok());
    ASSERT_EQ(ds->num_windows(), n);
    std::vector<int64_t> e0, e1;
    for (int e = 0; e < 2; ++e) {
      std::set<int64_t> seen;
      for (int i = 0; i < n; ++i) {
        const int64_t w = ds->WindowOfSample(int64_t{e} * n + i);
        ASSERT_GE(w, 0);
        ASSERT_LT(w, n);
        seen.insert(w);
        (e == 0 ? e0 : e1).push_back(w);
      }
      EXPECT_EQ(static_cast<int>(seen.size()), n) << "n=" << n << " epoch " << e;
    }
    if (n >= 64) {
      EXPECT_NE(e0, e1) << "n=" << n;
    }
  }
  auto a = TextDataset::FromTokens(Iota(401), 4, 1, "random");
  auto b = TextDataset::FromTokens(Iota(401), 4, 2, "random");
  EXPECT_EQ(a->Batch(3, 8).inputs, a->Batch(3, 8).inputs);
  EXPECT_NE(a->Batch(0, 8).inputs, b->Batch(0, 8).inputs);
}

// Both layouts, both dtypes: the same tokens come back.
TEST_F(TokenDataTest, TokenFileLayoutsAndDtypes) {
  const std::vector<uint32_t> small = Iota(50, 1000);    // 0 .. 49000: fits uint16
  const std::vector<uint32_t> large = Iota(50, 100000);  // up to 4.9e6: uint32 only
  struct Case {
    std::string name, dtype;
    std::vector<uint32_t> tokens;
    int width;
    std::vector<int32_t> header;
    std::string description;
  };
  const Case cases[] = {
      {"raw16.bin", "uint16", small, 2, {}, "uint16 tokens"},
      {"raw32.bin", "uint32", large, 4, {}, "uint32 tokens"},
      {"llmc16.bin", "", small, 2, {kLlmcMagicU16, 1, 50}, "uint16 tokens (llm.c header)"},
      {"llmc32.bin", "", large, 4, {kLlmcMagicU32, 7, 50}, "uint32 tokens (llm.c header)"},
      {"llmc16b.bin", "uint16", small, 2, {kLlmcMagicU16, 1, 50}, "uint16 tokens (llm.c header)"},
  };
  for (const Case& c : cases) {
    const std::string path = WriteTokens(c.name, c.tokens, c.width, c.header);
    auto ds = TextDataset::Open(Spec(path, c.dtype), 7, 1, 5000000);
    ASSERT_TRUE(ds.ok()) << c.name << ": " << ds.status().ToString();
    EXPECT_EQ(ds->description(), c.description);
    ASSERT_EQ(ds->num_tokens(), 50) << c.name;
    for (int i = 0; i < 50; ++i) ASSERT_EQ(ds->TokenAt(i), c.tokens[i]) << c.name << " token " << i;
    const TokenBatch b = ds->Batch(0, 2);
    EXPECT_EQ(b.inputs[7], static_cast<int64_t>(c.tokens[7]));
    EXPECT_EQ(b.targets[13], static_cast<int64_t>(c.tokens[14]));
  }
}

void ExpectError(const StatusOr<TextDataset>& ds, const std::vector<std::string>& parts) {
  ASSERT_FALSE(ds.ok()) << "accepted; expected an error with '" << parts[0] << "'";
  for (const std::string& p : parts)
    EXPECT_NE(ds.status().message().find(p), std::string::npos) << ds.status().message() << "\n  lacks: " << p;
}

TEST_F(TokenDataTest, BadTokenFilesAreRefusedNamingFileAndOffset) {
  std::vector<uint32_t> t = Iota(40);
  t[29] = 300;  // >= vocab 256
  const std::string raw = WriteTokens("bad16.bin", t, 2);
  ExpectError(TextDataset::Open(Spec(raw, "uint16"), 4, 1, 256),
              {"--data " + raw, "token 300 at token offset 29 (byte offset 58)", "vocab_size 256"});
  const std::string llmc = WriteTokens("bad.bin", t, 2, {kLlmcMagicU16, 1, 40});
  ExpectError(TextDataset::Open(Spec(llmc), 4, 1, 256),
              {"--data " + llmc, "token 300 at token offset 29 (byte offset 1082)"});
  // Header count disagreeing with the size (truncated file).
  const std::string trunc = WriteTokens("trunc.bin", Iota(40), 2, {kLlmcMagicU16, 1, 41});
  ExpectError(TextDataset::Open(Spec(trunc), 4, 1, 256), {"--data " + trunc, "says 41 tokens", "truncated"});
  const std::string version = WriteTokens("version.bin", Iota(40), 2, {kLlmcMagicU16, 3, 40});
  ExpectError(TextDataset::Open(Spec(version), 4, 1, 256), {"version 3"});
  // dtype disagreeing with the header.
  ExpectError(TextDataset::Open(Spec(llmc, "uint32"), 4, 1, 1000), {"says uint16 tokens but --token-dtype is uint32"});
  // Odd byte count for uint16.
  std::ofstream(Path("odd.u16"), std::ios::binary) << std::string(41, 'a');
  ExpectError(TextDataset::Open(Spec(Path("odd.u16"), "uint16"), 4, 1, 1 << 16), {"41 bytes is not a whole number"});
  // A .bin without a header or dtype is not read as text.
  ExpectError(TextDataset::Open(Spec(raw), 4, 1, 256), {"give --token-dtype"});
  // Too few tokens.
  const std::string shortf = WriteTokens("short.u32", Iota(4), 4);
  ExpectError(TextDataset::Open(Spec(shortf, "uint32"), 4, 1, 256), {"4 tokens, need at least 5"});
  // Bytes need a 256-entry vocabulary.
  std::ofstream(Path("t.txt")) << "hello world, hello world";
  ExpectError(TextDataset::Open(Spec(Path("t.txt")), 4, 1, 100), {"vocab_size >= 256"});
  // Flags.
  DataSpec bad = Spec(Path("t.txt"), "", "shuffled");
  ExpectError(TextDataset::Open(bad, 4, 1, 256), {"--data-order 'shuffled'"});
  ExpectError(TextDataset::Open(Spec(Path("t.txt"), "int8"), 4, 1, 256), {"--token-dtype 'int8'"});
}

// /dev/zero is refused at once; a 1 GiB sparse file (as bytes and as uint16
// tokens, which are scanned once for the vocabulary bound) opens and serves
// batches with the resident set growing by far less than the file.
TEST_F(TokenDataTest, HugeInputsKeepMemoryBounded) {
  const long before = RssKiB();
  ExpectError(TextDataset::Open(Spec("/dev/zero"), 64, 1, 256), {"--data /dev/zero: not a regular file"});
  const int64_t size = int64_t{1} << 30;
  for (const std::string& dtype : {std::string(""), std::string("uint16")}) {
    const std::string path = Path(dtype.empty() ? "big.txt" : "big.u16");
    {
      const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(::ftruncate(fd, size), 0);  // sparse: no disk blocks
      ::close(fd);
    }
    for (const std::string& order : {std::string("random"), std::string("sequential")}) {
      if (!dtype.empty() && order == "sequential") continue;  // one scan of the token file is enough
      auto ds = TextDataset::Open(Spec(path, dtype, order), 64, 1, 256);
      ASSERT_TRUE(ds.ok()) << ds.status().ToString();
      for (int step = 0; step < 200; ++step) {
        const TokenBatch b = ds->Batch(step, 64);
        ASSERT_EQ(b.inputs[0], 0);
      }
    }
    fs::remove(path);
  }
  const long grew_kib = RssKiB() - before;
  std::printf("RSS grew by %ld KiB reading 1 GiB sparse files (bytes and uint16)\n", grew_kib);
  EXPECT_LT(grew_kib, 64 * 1024) << "the data was not streamed";
}

// A tiny SentencePiece model trained here by spm_train (Debian package
// `sentencepiece`): encode/decode round trip, the tokenized dataset equals the
// tokenizer's ids line by line, `tokenize`'s llm.c file reads back the same
// tokens, and a vocabulary mismatch names both sizes and the file.
TEST_F(TokenDataTest, SentencePieceRoundTripAndVocabularyCheck) {
  if (std::system("command -v spm_train > /dev/null 2>&1") != 0)
    GTEST_FAIL() << "spm_train not found (apt-get install sentencepiece; launch/setup.sh installs it)";
  const std::string text = Path("corpus.txt");
  {
    std::ofstream out(text);
    const char* words[] = {"pipeline", "stage",  "rank",   "bubble", "schedule", "forward", "backward",
                           "weight",   "tensor", "memory", "the",    "of",       "a",       "and"};
    for (int i = 0; i < 400; ++i) {
      for (int j = 0; j < 9; ++j) out << words[(i * 7 + j * 3) % 14] << (j == 8 ? "" : " ");
      out << ".\n";
    }
  }
  const std::string prefix = Path("spm");
  const std::string cmd = "spm_train --input=" + text + " --model_prefix=" + prefix +
                          " --vocab_size=32 --model_type=unigram --character_coverage=1.0 > " + Path("spm.log") +
                          " 2>&1";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "spm_train failed; see " << Path("spm.log");
  auto tok = Tokenizer::Load(prefix + ".model");
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_EQ((*tok)->vocab_size(), 32);
  const std::string sentence = "the pipeline stage and the bubble of a schedule.";
  const std::vector<int> ids = (*tok)->Encode(sentence);
  EXPECT_LT(ids.size(), sentence.size());  // pieces, not characters
  EXPECT_EQ((*tok)->Decode(ids), sentence);

  DataSpec spec = Spec(text);
  spec.tokenizer = prefix + ".model";
  auto ds = TextDataset::Open(spec, 8, 1, 32);
  ASSERT_TRUE(ds.ok()) << ds.status().ToString();
  std::vector<int> expect;
  {
    std::ifstream in(text);
    std::string line;
    while (std::getline(in, line)) {
      const std::vector<int> l = (*tok)->Encode(line);
      expect.insert(expect.end(), l.begin(), l.end());
    }
  }
  ASSERT_EQ(ds->num_tokens(), static_cast<int64_t>(expect.size()));
  for (size_t i = 0; i < expect.size(); ++i)
    ASSERT_EQ(ds->TokenAt(static_cast<int64_t>(i)), static_cast<uint32_t>(expect[i]));

  // `pipewright tokenize`'s file: llm.c header, same tokens.
  auto count = WriteTokenFile(**tok, text, Path("corpus.bin"));
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_EQ(*count, static_cast<int64_t>(expect.size()));
  auto bin = TextDataset::Open(Spec(Path("corpus.bin")), 8, 1, 32);
  ASSERT_TRUE(bin.ok()) << bin.status().ToString();
  EXPECT_EQ(bin->description(), "uint16 tokens (llm.c header)");
  EXPECT_EQ(bin->Batch(5, 4).inputs, ds->Batch(5, 4).inputs);

  // Vocabulary mismatch: both numbers and the file.
  ExpectError(TextDataset::Open(spec, 8, 1, 256),
              {"--tokenizer " + prefix + ".model", "vocabulary of 32 pieces", "model.vocab_size is 256"});
  // Not a model.
  DataSpec junk = spec;
  junk.tokenizer = text;
  ExpectError(TextDataset::Open(junk, 8, 1, 32), {"--tokenizer " + text + ": not a SentencePiece model"});
}

}  // namespace
}  // namespace pw::exec
