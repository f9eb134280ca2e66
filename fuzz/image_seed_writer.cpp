// Writes the image fuzzer's seeds into a directory: small valid files of the formats stb decodes,
// each prefixed with the fuzzer's budget byte. stb_image_write (Debian libstb) for PNG, BMP, TGA,
// JPEG and HDR; PPM, PGM and a one-frame GIF by hand.
#include <cstdio>
#include <string>
#include <vector>

#include <stb/stb_image_write.h>

namespace {

std::string dir;

void put(const std::string& name, const std::vector<unsigned char>& bytes) {
  FILE* f = std::fopen((dir + "/" + name).c_str(), "wb");
  if (!f) return;
  const unsigned char budget = 0x10;
  std::fwrite(&budget, 1, 1, f);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

void sink(void* ctx, void* data, int size) {
  auto* v = static_cast<std::vector<unsigned char>*>(ctx);
  v->insert(v->end(), static_cast<unsigned char*>(data), static_cast<unsigned char*>(data) + size);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  dir = argv[1];
  const int w = 37, h = 23;
  std::vector<unsigned char> rgba(static_cast<size_t>(w) * h * 4);
  for (size_t i = 0; i < rgba.size(); ++i) rgba[i] = static_cast<unsigned char>(i * 37 + i / 7);
  std::vector<float> hdr(static_cast<size_t>(w) * h * 3, 0.5f);
  for (int comp : {1, 3, 4}) {
    std::vector<unsigned char> out;
    stbi_write_png_to_func(sink, &out, w, h, comp, rgba.data(), w * comp);
    put("seed" + std::to_string(comp) + ".png", out);
    out.clear();
    stbi_write_bmp_to_func(sink, &out, w, h, comp, rgba.data());
    put("seed" + std::to_string(comp) + ".bmp", out);
    out.clear();
    stbi_write_tga_to_func(sink, &out, w, h, comp, rgba.data());
    put("seed" + std::to_string(comp) + ".tga", out);
    out.clear();
    stbi_write_jpg_to_func(sink, &out, w, h, comp, rgba.data(), 80);
    put("seed" + std::to_string(comp) + ".jpg", out);
  }
  std::vector<unsigned char> out;
  stbi_write_hdr_to_func(sink, &out, w, h, 3, hdr.data());
  put("seed.hdr", out);
  std::string ppm = "P6\n4 3\n255\n";
  for (int i = 0; i < 36; ++i) ppm += static_cast<char>(i * 7);
  put("seed.ppm", std::vector<unsigned char>(ppm.begin(), ppm.end()));
  std::string pgm = "P5\n3 2\n255\n\x01\x02\x03\x04\x05\x06";
  put("seed.pgm", std::vector<unsigned char>(pgm.begin(), pgm.end()));
  // A 2x2 GIF89a, 2-colour table, one frame (LZW min code size 2).
  const unsigned char gif[] = {'G', 'I', 'F', '8', '9', 'a', 2, 0, 2, 0, 0x80, 0, 0, 0, 0, 0, 255, 255, 255,
                               0x2C, 0, 0, 0, 0, 2, 0, 2, 0, 0, 2, 3, 0x84, 0x1D, 0x05, 0, 0x3B};
  put("seed.gif", std::vector<unsigned char>(gif, gif + sizeof gif));
  return 0;
}
