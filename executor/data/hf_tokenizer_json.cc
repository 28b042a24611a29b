#include "executor/data/hf_tokenizer_json.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace pw::exec {

namespace {

using json = nlohmann::json;

const json* Member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string TypeOf(const json& j) {
  const json* t = Member(j, "type");
  return t && t->is_string() ? t->get<std::string>() : "";
}

// Fills an HfTokenizerSpec (which it extends, so that the fields read as
// in the description) from the parts of the file, one Load per part.
struct Reader : HfTokenizerSpec {
  std::string shown;  // --tokenizer as given

  Status Error(const std::string& field, const std::string& why) const {
    return Status::InvalidArgument("--tokenizer " + shown + ": " + field + ": " + why);
  }

  // A "Sequence" component: `load` on each element of j[key] (an array),
  // named FIELD.KEY[i] in messages.
  Status EachOf(const json& j, const char* key, const std::string& field,
                Status (Reader::*load)(const json&, const std::string&)) {
    const json* list = Member(j, key);
    const std::string where = field + "." + key;
    if (!list || !list->is_array()) return Error(where, "missing or not an array");
    for (size_t i = 0; i < list->size(); ++i)
      PW_RETURN_IF_ERROR((this->*load)((*list)[i], where + "[" + std::to_string(i) + "]"));
    return Status::Ok();
  }

  Status LoadModel(const json& m);
  Status LoadAdded(const json& a);
  Status LoadNormalizer(const json& n, const std::string& field);
  Status LoadPre(const json& p, const std::string& field);
  Status LoadPost(const json& p, const std::string& field);
  Status LoadDecoder(const json& d, const std::string& field);
};

Status Reader::LoadModel(const json& m) {
  if (!m.is_object()) return Error("model", "missing or not an object");
  const std::string type = TypeOf(m);
  if (type != "BPE" && !(type.empty() && Member(m, "merges")))
    return Error("model.type", "'" + type + "' is not supported (only BPE)");
  if (const json* d = Member(m, "dropout"); d && !(d->is_number() && d->get<double>() == 0.0))
    return Error("model.dropout", "BPE dropout is not supported (it makes encoding random)");
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const json* s = Member(m, k); s && !(s->is_string() && s->get<std::string>().empty()))
      return Error(std::string("model.") + k, "is not supported (only null)");
  const json* vocab = Member(m, "vocab");
  if (!vocab || !vocab->is_object()) return Error("model.vocab", "missing or not an object");
  int max_id = -1;
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() > (1 << 30))
      return Error("model.vocab['" + it.key() + "']", "not an id (an integer >= 0)");
    const int id = it.value().get<int>();
    token_to_id[it.key()] = id;
    max_id = std::max(max_id, id);
  }
  id_to_token.assign(static_cast<size_t>(max_id + 1), "");
  for (const auto& [tok, id] : token_to_id) id_to_token[static_cast<size_t>(id)] = tok;
  if (const json* b = Member(m, "byte_fallback")) byte_fallback = b->is_boolean() && b->get<bool>();
  if (const json* b = Member(m, "fuse_unk")) fuse_unk = b->is_boolean() && b->get<bool>();
  if (const json* b = Member(m, "ignore_merges")) ignore_merges = b->is_boolean() && b->get<bool>();
  if (const json* u = Member(m, "unk_token")) {
    if (!u->is_string()) return Error("model.unk_token", "not a string");
    auto it = token_to_id.find(u->get<std::string>());
    if (it == token_to_id.end())
      return Error("model.unk_token", "'" + u->get<std::string>() + "' is not in model.vocab");
    unk_id = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    auto it = token_to_id.find(name);
    fallback_id[b] = it == token_to_id.end() ? -1 : it->second;
  }
  const json* ms = Member(m, "merges");
  if (!ms || !ms->is_array()) return Error("model.merges", "missing or not an array");
  merges.reserve(ms->size() * 2);
  for (size_t r = 0; r < ms->size(); ++r) {
    const json& e = (*ms)[r];
    const std::string field = "model.merges[" + std::to_string(r) + "]";
    std::string a, b;
    if (e.is_string()) {  // "a b"
      const std::string s = e.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        return Error(field, "'" + s + "' is not two tokens separated by one space");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {  // ["a", "b"]
      a = e[0].get<std::string>();
      b = e[1].get<std::string>();
    } else {
      return Error(field, "neither \"a b\" nor [\"a\", \"b\"]");
    }
    auto ia = token_to_id.find(a), ib = token_to_id.find(b), iab = token_to_id.find(a + b);
    if (ia == token_to_id.end() || ib == token_to_id.end())
      return Error(field, "'" + (ia == token_to_id.end() ? a : b) + "' is not in model.vocab");
    if (iab == token_to_id.end()) return Error(field, "the merged token '" + a + b + "' is not in model.vocab");
    const uint64_t key = (static_cast<uint64_t>(ia->second) << 32) | static_cast<uint32_t>(ib->second);
    merges[key] = std::make_pair(static_cast<int>(r), iab->second);  // a repeated pair: the last rank, as HF's map
  }
  return Status::Ok();
}

Status Reader::LoadAdded(const json& a) {
  if (!a.is_array()) return Error("added_tokens", "not an array");
  for (size_t i = 0; i < a.size(); ++i) {
    const json& t = a[i];
    const std::string field = "added_tokens[" + std::to_string(i) + "]";
    const json* content = Member(t, "content");
    const json* id = Member(t, "id");
    if (!content || !content->is_string() || content->get<std::string>().empty())
      return Error(field + ".content", "missing or not a non-empty string");
    if (!id || !id->is_number_integer() || id->get<int64_t>() < 0 || id->get<int64_t>() > (1 << 30))
      return Error(field + ".id", "missing or not an id");
    for (const char* k : {"single_word", "lstrip", "rstrip"})
      if (const json* f = Member(t, k); f && f->is_boolean() && f->get<bool>())
        return Error(field + "." + k, "true is not supported");
    const json* sp = Member(t, "special");
    Added ad{content->get<std::string>(), id->get<int>(), sp && sp->is_boolean() && sp->get<bool>()};
    if (static_cast<size_t>(ad.id) >= id_to_token.size()) id_to_token.resize(static_cast<size_t>(ad.id) + 1);
    id_to_token[static_cast<size_t>(ad.id)] = ad.content;
    added.push_back(ad);
  }
  for (const char* name : {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>", "<|im_end|>"}) {
    for (const Added& ad : added)
      if (ad.special && ad.content == name) end_of_text_id = ad.id;
    if (end_of_text_id >= 0) break;
  }
  return Status::Ok();
}

Status Reader::LoadNormalizer(const json& n, const std::string& field) {
  const std::string type = TypeOf(n);
  if (type == "Sequence") return EachOf(n, "normalizers", field, &Reader::LoadNormalizer);
  if (type == "Prepend") {
    const json* p = Member(n, "prepend");
    if (!p || !p->is_string()) return Error(field + ".prepend", "missing or not a string");
    norms.push_back({true, p->get<std::string>(), ""});
    return Status::Ok();
  }
  if (type == "Replace") {
    const json* pat = Member(n, "pattern");
    const json* s = pat ? Member(*pat, "String") : nullptr;
    if (!s || !s->is_string()) return Error(field + ".pattern", "only {\"String\": ...} patterns are supported");
    const json* c = Member(n, "content");
    if (!c || !c->is_string()) return Error(field + ".content", "missing or not a string");
    norms.push_back({false, s->get<std::string>(), c->get<std::string>()});
    return Status::Ok();
  }
  return Error(field + ".type", "'" + type +
                                    "' is not supported (supported: Prepend, Replace with a String "
                                    "pattern, a Sequence of these; no Unicode normalization such as NFC)");
}

Status Reader::LoadPre(const json& p, const std::string& field) {
  const std::string type = TypeOf(p);
  if (!pres.empty() && pres.back().kind == Pre::kByteLevel)
    return Error(field, "a pre-tokenizer after ByteLevel is not supported");
  if (type == "Sequence") return EachOf(p, "pretokenizers", field, &Reader::LoadPre);
  Pre pre{};
  if (type == "Split") {
    pre.kind = Pre::kSplit;
    const json* pat = Member(p, "pattern");
    const json* re = pat ? Member(*pat, "Regex") : nullptr;
    const json* str = pat ? Member(*pat, "String") : nullptr;
    if (!(re && re->is_string()) && !(str && str->is_string()))
      return Error(field + ".pattern", "missing, or neither {\"Regex\": ...} nor {\"String\": ...}");
    pre.pattern = re ? re->get<std::string>() : str->get<std::string>();
    pre.literal = re == nullptr;
    pre.field = field + ".pattern";
    const json* beh = Member(p, "behavior");
    const std::string b = beh && beh->is_string() ? beh->get<std::string>() : "";
    if (b != "Isolated" && b != "Removed")
      return Error(field + ".behavior", "'" + b + "' is not supported (Isolated, Removed)");
    pre.removed = b == "Removed";
    if (const json* inv = Member(p, "invert"); inv && inv->is_boolean() && inv->get<bool>())
      return Error(field + ".invert", "true is not supported");
  } else if (type == "ByteLevel") {
    pre.kind = Pre::kByteLevel;
    if (const json* a = Member(p, "add_prefix_space"); a && a->is_boolean() && a->get<bool>())
      return Error(field + ".add_prefix_space", "true is not supported");
    const json* ur = Member(p, "use_regex");
    if (!ur || (ur->is_boolean() && ur->get<bool>())) {  // GPT-2's pattern (OpenAI's encoder.py; HF's default)
      pre.pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
      pre.field = field;
    }
    for (const Pre& q : pres)
      if (q.kind == Pre::kMetaspace) return Error(field, "ByteLevel after Metaspace is not supported");
    byte_level = true;
  } else if (type == "Metaspace") {
    pre.kind = Pre::kMetaspace;
    const json* r = Member(p, "replacement");
    pre.replacement = r && r->is_string() ? r->get<std::string>() : "\xE2\x96\x81";
    if (pre.replacement.empty()) return Error(field + ".replacement", "empty");
    pre.prepend = 2;
    if (const json* s = Member(p, "prepend_scheme")) {
      const std::string v = s->is_string() ? s->get<std::string>() : "";
      if (v == "always")
        pre.prepend = 2;
      else if (v == "first")
        pre.prepend = 1;
      else if (v == "never")
        pre.prepend = 0;
      else
        return Error(field + ".prepend_scheme", "'" + v + "' is not always, first or never");
    } else if (const json* a = Member(p, "add_prefix_space"); a && a->is_boolean()) {
      pre.prepend = a->get<bool>() ? 2 : 0;
    }
    if (const json* s = Member(p, "split"); s && s->is_boolean()) pre.split = s->get<bool>();
  } else {
    return Error(field + ".type", "'" + type +
                                      "' is not supported (supported: Split, ByteLevel, Metaspace, "
                                      "a Sequence of these)");
  }
  pres.push_back(std::move(pre));
  return Status::Ok();
}

Status Reader::LoadPost(const json& p, const std::string& field) {
  const std::string type = TypeOf(p);
  if (type == "ByteLevel") return Status::Ok();  // offsets only: no effect on ids
  if (type == "Sequence") return EachOf(p, "processors", field, &Reader::LoadPost);
  if (type != "TemplateProcessing")
    return Error(field + ".type", "'" + type +
                                      "' is not supported (supported: ByteLevel, TemplateProcessing, "
                                      "a Sequence of these)");
  if (!prefix_ids.empty() || !suffix_ids.empty()) return Error(field, "a second TemplateProcessing is not supported");
  const json* single = Member(p, "single");
  const json* specials = Member(p, "special_tokens");
  if (!single || !single->is_array()) return Error(field + ".single", "missing or not an array");
  int sequences = 0;
  for (size_t i = 0; i < single->size(); ++i) {
    const json& item = (*single)[i];
    const std::string f = field + ".single[" + std::to_string(i) + "]";
    if (const json* seq = Member(item, "Sequence")) {
      const json* id = Member(*seq, "id");
      if (!id || !id->is_string() || id->get<std::string>() != "A")
        return Error(f, "only the sequence $A is supported");
      ++sequences;
    } else if (const json* st = Member(item, "SpecialToken")) {
      const json* name = Member(*st, "id");
      if (!name || !name->is_string()) return Error(f + ".SpecialToken.id", "missing or not a string");
      const json* entry = specials ? Member(*specials, name->get<std::string>().c_str()) : nullptr;
      const json* ids = entry ? Member(*entry, "ids") : nullptr;
      if (!ids || !ids->is_array())
        return Error(field + ".special_tokens['" + name->get<std::string>() + "'].ids", "missing or not an array");
      for (const json& v : *ids) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
            v.get<int64_t>() >= static_cast<int64_t>(id_to_token.size()))
          return Error(field + ".special_tokens['" + name->get<std::string>() + "'].ids",
                       "an id out of the vocabulary");
        (sequences == 0 ? prefix_ids : suffix_ids).push_back(v.get<int>());
      }
    } else {
      return Error(f, "neither a Sequence nor a SpecialToken");
    }
  }
  if (sequences != 1) return Error(field + ".single", "must hold the sequence $A exactly once");
  return Status::Ok();
}

Status Reader::LoadDecoder(const json& d, const std::string& field) {
  const std::string type = TypeOf(d);
  Dec dec{};
  if (type == "Sequence") {
    return EachOf(d, "decoders", field, &Reader::LoadDecoder);
  } else if (type == "ByteLevel") {
    dec.kind = Dec::kByteLevel;
  } else if (type == "ByteFallback") {
    dec.kind = Dec::kByteFallback;
  } else if (type == "Fuse") {
    dec.kind = Dec::kFuse;
  } else if (type == "Replace") {
    dec.kind = Dec::kReplace;
    const json* pat = Member(d, "pattern");
    const json* s = pat ? Member(*pat, "String") : nullptr;
    const json* c = Member(d, "content");
    if (!s || !s->is_string()) return Error(field + ".pattern", "only {\"String\": ...} patterns are supported");
    if (!c || !c->is_string()) return Error(field + ".content", "missing or not a string");
    dec.a = s->get<std::string>();
    dec.b = c->get<std::string>();
  } else if (type == "Strip") {
    dec.kind = Dec::kStrip;
    const json* c = Member(d, "content");
    if (!c || !c->is_string() || c->get<std::string>().empty()) return Error(field + ".content", "missing or empty");
    dec.a = c->get<std::string>();
    const json* s0 = Member(d, "start");
    const json* s1 = Member(d, "stop");
    dec.start = s0 && s0->is_number_integer() ? s0->get<int>() : 0;
    dec.stop = s1 && s1->is_number_integer() ? s1->get<int>() : 0;
  } else if (type == "Metaspace") {
    dec.kind = Dec::kMetaspace;
    const json* r = Member(d, "replacement");
    dec.a = r && r->is_string() ? r->get<std::string>() : "\xE2\x96\x81";
    dec.prepend = 2;
    if (const json* s = Member(d, "prepend_scheme"); s && s->is_string() && s->get<std::string>() == "never")
      dec.prepend = 0;
    if (const json* a = Member(d, "add_prefix_space");
        a && a->is_boolean() && !a->get<bool>() && !Member(d, "prepend_scheme"))
      dec.prepend = 0;
  } else {
    return Error(field + ".type", "'" + type +
                                      "' is not supported (supported: ByteLevel, Metaspace, Replace, "
                                      "ByteFallback, Fuse, Strip, a Sequence of these)");
  }
  decs.push_back(dec);
  return Status::Ok();
}

}  // namespace

StatusOr<HfTokenizerSpec> ReadTokenizerJson(const std::string& json_path, const std::string& shown) {
  std::ifstream in(json_path, std::ios::binary);
  if (!in) return Status::NotFound("--tokenizer " + shown + ": cannot open " + json_path);
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::InvalidArgument("--tokenizer " + shown + ": " + json_path +
                                   " is not a JSON object (tokenizer.json)");
  Reader r;
  r.shown = shown;
  // "truncation" and "padding" (options of HF's batch API) are not applied.
  const json* model = Member(j, "model");
  PW_RETURN_IF_ERROR(r.LoadModel(model ? *model : json()));
  if (const json* a = Member(j, "added_tokens")) PW_RETURN_IF_ERROR(r.LoadAdded(*a));
  if (const json* n = Member(j, "normalizer")) PW_RETURN_IF_ERROR(r.LoadNormalizer(*n, "normalizer"));
  if (const json* p = Member(j, "pre_tokenizer")) PW_RETURN_IF_ERROR(r.LoadPre(*p, "pre_tokenizer"));
  if (const json* p = Member(j, "post_processor")) PW_RETURN_IF_ERROR(r.LoadPost(*p, "post_processor"));
  if (const json* d = Member(j, "decoder")) {
    r.has_decoder = true;
    PW_RETURN_IF_ERROR(r.LoadDecoder(*d, "decoder"));
  }
  HfTokenizerSpec spec = std::move(r);
  return spec;
}

}  // namespace pw::exec
