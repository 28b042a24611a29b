// A tiny PNG reader for the browser tests: 8-bit RGB or RGBA, non-interlaced
// (what headless Chromium writes), decoded with zlib. Enough to sample the
// colour at a pixel of a screenshot.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace pw::viz::testing {

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // (height, width, 3)
  const uint8_t* At(int x, int y) const { return &rgb[(static_cast<size_t>(y) * width + x) * 3]; }
};

// Returns an empty string on success, else what is wrong.
inline std::string ReadPng(const std::string& path, Image* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot open " + path;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string d = ss.str();
  if (d.size() < 8 || d.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return "not a PNG";
  auto be32 = [&](size_t p) {
    return (uint32_t(uint8_t(d[p])) << 24) | (uint32_t(uint8_t(d[p + 1])) << 16) | (uint32_t(uint8_t(d[p + 2])) << 8) |
           uint32_t(uint8_t(d[p + 3]));
  };
  int depth = 0, color = 0, interlace = 0;
  std::string idat;
  for (size_t p = 8; p + 8 <= d.size();) {
    uint32_t len = be32(p);
    std::string type = d.substr(p + 4, 4);
    if (p + 12 + len > d.size()) return "truncated chunk " + type;
    if (type == "IHDR") {
      out->width = static_cast<int>(be32(p + 8));
      out->height = static_cast<int>(be32(p + 12));
      depth = uint8_t(d[p + 16]);
      color = uint8_t(d[p + 17]);
      interlace = uint8_t(d[p + 20]);
    } else if (type == "IDAT") {
      idat += d.substr(p + 8, len);
    } else if (type == "IEND") {
      break;
    }
    p += 12 + len;
  }
  if (depth != 8 || (color != 2 && color != 6) || interlace != 0)
    return "unsupported PNG (depth " + std::to_string(depth) + ", colour type " + std::to_string(color) + ")";
  const int bpp = color == 6 ? 4 : 3;
  const size_t stride = static_cast<size_t>(out->width) * bpp;
  std::vector<uint8_t> raw((stride + 1) * out->height);
  uLongf raw_len = raw.size();
  if (uncompress(raw.data(), &raw_len, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) != Z_OK ||
      raw_len != raw.size())
    return "bad image data";
  std::vector<uint8_t> prev(stride, 0), cur(stride);
  out->rgb.assign(static_cast<size_t>(out->width) * out->height * 3, 0);
  for (int y = 0; y < out->height; ++y) {
    const uint8_t* line = &raw[y * (stride + 1)];
    uint8_t filter = line[0];
    for (size_t i = 0; i < stride; ++i) {
      int a = i >= size_t(bpp) ? cur[i - bpp] : 0, b = prev[i], c = i >= size_t(bpp) ? prev[i - bpp] : 0;
      int x = line[1 + i], v = 0;
      switch (filter) {
        case 0:
          v = x;
          break;
        case 1:
          v = x + a;
          break;
        case 2:
          v = x + b;
          break;
        case 3:
          v = x + (a + b) / 2;
          break;
        case 4: {
          int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          v = x + (pa <= pb && pa <= pc ? a : pb <= pc ? b : c);
          break;
        }
        default:
          return "bad filter " + std::to_string(filter);
      }
      cur[i] = static_cast<uint8_t>(v & 0xff);
    }
    for (int x = 0; x < out->width; ++x)
      for (int k = 0; k < 3; ++k) out->rgb[(static_cast<size_t>(y) * out->width + x) * 3 + k] = cur[x * bpp + k];
    prev.swap(cur);
  }
  return "";
}

}  // namespace pw::viz::testing
