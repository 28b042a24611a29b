// Hugging Face tokenizer.json (executor/data/hf_tokenizer.h): ids identical to
// HF tokenizers' on the committed fixtures (tests/testdata/tokenizers/, made by
// make_fixtures.py: byte-level BPE with GPT-2's and Llama 3's patterns,
// Metaspace (prepend always / first, Metaspace decoder) and Llama 2 style
// byte-fallback BPE) for a real and a stress text,
// HF's decode, streaming a >1 MiB document and JSON Lines into token files
// (ids identical to encoding at once), and bad files refused naming the field.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "executor/data/hf_tokenizer.h"
#include "executor/data/tokenizer.h"

namespace pw::exec {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// The fixtures, from the source tree whatever the working directory.
const std::string kDir = std::string(PW_SOURCE_DIR) + "/tests/testdata/tokenizers/";
const char* const kFixtures[] = {"gpt2_bpe", "llama3_bpe", "metaspace_bpe", "llama2_bpe", "metaspace_first_bpe"};

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// "" when equal, else the first differing position and both ids.
std::string FirstDiff(const std::vector<int>& got, const std::vector<int>& want) {
  for (size_t i = 0; i < std::max(got.size(), want.size()); ++i) {
    const std::string g = i < got.size() ? std::to_string(got[i]) : "(end)";
    const std::string w = i < want.size() ? std::to_string(want[i]) : "(end)";
    if (g != w)
      return "first difference at position " + std::to_string(i) + ": got " + g + ", HF " + w + " (lengths " +
             std::to_string(got.size()) + " and " + std::to_string(want.size()) + ")";
  }
  return "";
}

class TokenizerJsonTest : public ::testing::TestWithParam<const char*> {};

TEST_P(TokenizerJsonTest, IdsAndDecodeIdenticalToHf) {
  const std::string name = GetParam();
  const json expected = json::parse(Slurp(std::string(kDir) + name + ".expected.json"));
  auto tok = Tokenizer::Load(std::string(kDir) + name);  // the directory
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  EXPECT_STREQ((*tok)->kind(), "tokenizer.json");
  int checked = 0;
  for (auto it = expected["texts"].begin(); it != expected["texts"].end(); ++it) {
    const std::string text = it.value().get<std::string>();
    const std::vector<int> want = expected["ids"][it.key()].get<std::vector<int>>();
    const std::vector<int> got = (*tok)->Encode(text);
    EXPECT_EQ(FirstDiff(got, want), "") << name << " text '" << it.key() << "'";
    EXPECT_EQ((*tok)->Decode(got), expected["decoded"][it.key()].get<std::string>()) << name << " " << it.key();
    for (int id : got) EXPECT_LT(id, (*tok)->vocab_size());
    ++checked;
  }
  EXPECT_EQ(checked, 4);
  // The real and stress texts round-trip where HF's do.
  for (const char* k : {"real", "stress"}) {
    if (expected["decoded"][k] == expected["texts"][k]) {
      EXPECT_EQ((*tok)->Decode((*tok)->Encode(expected["texts"][k].get<std::string>())),
                expected["texts"][k].get<std::string>());
    }
  }
  // The file itself loads too.
  auto file = Tokenizer::Load(std::string(kDir) + name + "/tokenizer.json");
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->vocab_size(), (*tok)->vocab_size());
}

// A document over 1 MiB is encoded in SafeCut pieces: ids identical to
// encoding it at once; JSON Lines documents are each preceded by the
// end-of-text id.
TEST_P(TokenizerJsonTest, StreamingTextAndJsonLinesMatchWholeEncoding) {
  const std::string name = GetParam();
  const json expected = json::parse(Slurp(std::string(kDir) + name + ".expected.json"));
  auto tok = Tokenizer::Load(std::string(kDir) + name);
  ASSERT_TRUE(tok.ok()) << tok.status().ToString();
  const std::string unit =
      expected["texts"]["real"].get<std::string>() + expected["texts"]["stress"].get<std::string>();
  std::string big;
  while (big.size() < (size_t{5} << 19)) big += unit;  // 2.5 MiB
  char tmpl[] = "/tmp/pw-tokjson-test-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  std::ofstream(dir + "/big.txt", std::ios::binary) << big;
  const std::vector<int> whole = (*tok)->Encode(big);
  const int width = (*tok)->vocab_size() <= 65536 ? 2 : 4;
  auto read_tokens = [&](const std::string& path, int64_t count) {
    std::vector<int> ids;
    const std::string bytes = Slurp(path);
    EXPECT_EQ(static_cast<int64_t>(bytes.size()), 1024 + count * width);
    for (size_t i = 1024; i + width <= bytes.size(); i += width) {
      uint32_t v = 0;
      for (int b = 0; b < width; ++b) v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[i + b])) << (8 * b);
      ids.push_back(static_cast<int>(v));
    }
    return ids;
  };
  auto count = WriteTokenFile(**tok, dir + "/big.txt", dir + "/big.bin");
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_EQ(FirstDiff(read_tokens(dir + "/big.bin", *count), whole), "") << name;

  // JSON Lines: three documents (one with newlines, one empty), a blank line.
  const int eot = (*tok)->end_of_text_id();
  ASSERT_GE(eot, 0) << name;
  const std::vector<std::string> docs = {"First document.\nIt has two lines.", "",
                                         expected["texts"]["stress"].get<std::string>()};
  {
    std::ofstream out(dir + "/docs.jsonl", std::ios::binary);
    for (const std::string& d : docs) out << json{{"id", 1}, {"text", d}}.dump() << "\n";
    out << "\n";
  }
  std::vector<int> want;
  for (const std::string& d : docs) {
    want.push_back(eot);
    for (int id : (*tok)->Encode(d)) want.push_back(id);
  }
  count = WriteTokenFile(**tok, dir + "/docs.jsonl", dir + "/docs.bin", "text");
  ASSERT_TRUE(count.ok()) << count.status().ToString();
  EXPECT_EQ(FirstDiff(read_tokens(dir + "/docs.bin", *count), want), "") << name;

  // Bad lines: named by line number and field.
  std::ofstream(dir + "/bad.jsonl") << "{\"text\": \"a\"}\n{\"body\": \"b\"}\n";
  count = WriteTokenFile(**tok, dir + "/bad.jsonl", dir + "/bad.bin", "text");
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.status().message().find("bad.jsonl line 2: no field 'text' (--text-field)"), std::string::npos)
      << count.status().ToString();
  std::ofstream(dir + "/bad2.jsonl") << "{\"text\": 3}\n";
  count = WriteTokenFile(**tok, dir + "/bad2.jsonl", dir + "/bad2.bin", "text");
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.status().message().find("line 1: field 'text' is not a string"), std::string::npos);
  std::ofstream(dir + "/bad3.jsonl") << "not json\n";
  count = WriteTokenFile(**tok, dir + "/bad3.jsonl", dir + "/bad3.bin", "text");
  ASSERT_FALSE(count.ok());
  EXPECT_NE(count.status().message().find("line 1: not a JSON object"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir + "/bad3.bin"));
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, TokenizerJsonTest, ::testing::ValuesIn(kFixtures));

TEST(TokenizerJson, ByteLevelMapIsGpt2s) {
  EXPECT_EQ(ByteLevelChar('A'), "A");
  EXPECT_EQ(ByteLevelChar('!'), "!");
  EXPECT_EQ(ByteLevelChar(' '), "\xC4\xA0");   // U+0120 'Ġ'
  EXPECT_EQ(ByteLevelChar('\n'), "\xC4\x8A");  // U+010A 'Ċ'
  EXPECT_EQ(ByteLevelChar(0), "\xC4\x80");     // U+0100
  EXPECT_EQ(ByteLevelChar(0xAD), "\xC5\x83");  // U+0143 (the last of the 68 remapped bytes)
  EXPECT_EQ(ByteLevelChar(0xFF), "\xC3\xBF");  // ÿ
}

// Bad files: refused naming the JSON field.
TEST(TokenizerJson, BadFilesNameTheField) {
  const json base = json::parse(Slurp(std::string(kDir) + "llama3_bpe/tokenizer.json"));
  char tmpl[] = "/tmp/pw-tokjson-bad-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  auto refused = [&](json j, const std::string& want) {
    const std::string path = dir + "/tokenizer.json";
    std::ofstream(path) << j.dump();
    auto t = Tokenizer::Load(path);
    ASSERT_FALSE(t.ok()) << want;
    EXPECT_NE(t.status().message().find(want), std::string::npos) << t.status().ToString();
  };
  json j = base;
  j["model"]["type"] = "WordPiece";
  refused(j, "model.type: 'WordPiece' is not supported (only BPE)");
  j = base;
  j["normalizer"] = {{"type", "NFC"}};
  refused(j, "normalizer.type: 'NFC' is not supported");
  j = base;
  j["model"]["merges"][0] = "a b c";
  refused(j, "model.merges[0]: 'a b c' is not two tokens");
  j = base;
  j["model"]["merges"][5] = json::array({"zzzq", "x"});
  refused(j, "model.merges[5]: 'zzzq' is not in model.vocab");
  j = base;
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  refused(j, "pre_tokenizer.pretokenizers[0].pattern: PCRE2 cannot compile the pattern");
  j = base;
  j["pre_tokenizer"]["pretokenizers"][0]["behavior"] = "MergedWithNext";
  refused(j, "pre_tokenizer.pretokenizers[0].behavior: 'MergedWithNext' is not supported");
  j = base;
  j["pre_tokenizer"] = {{"type", "Whitespace"}};
  refused(j, "pre_tokenizer.type: 'Whitespace' is not supported");
  j = base;
  j["post_processor"] = {{"type", "BertProcessing"}};
  refused(j, "post_processor.type: 'BertProcessing' is not supported");
  j = base;
  j["decoder"] = {{"type", "WordPiece"}};
  refused(j, "decoder.type: 'WordPiece' is not supported");
  j = base;
  j["added_tokens"][0]["lstrip"] = true;
  refused(j, "added_tokens[0].lstrip: true is not supported");
  j = base;
  j["model"]["dropout"] = 0.1;
  refused(j, "model.dropout");
  j = base;
  j.erase("model");
  refused(j, "model: missing");
  std::ofstream(dir + "/tokenizer.json") << "{ not json";
  auto t = Tokenizer::Load(dir + "/tokenizer.json");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("is not a JSON object"), std::string::npos);
  fs::remove(dir + "/tokenizer.json");
  t = Tokenizer::Load(dir);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("a directory without tokenizer.json"), std::string::npos);
  t = Tokenizer::Load(dir + "/nope.json");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("no such file"), std::string::npos);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pw::exec
