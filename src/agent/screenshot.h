// Deterministic synthetic screenshots of generated screens (issue 26): a phone-sized RGB image
// that draws an accessibility tree's controls as boxes and text — a status bar, the app's top
// bar, a search box, chips, the list rows (their texts, switches, icons), a floating button and
// the bottom tabs — with a tiny rasteriser of filled rectangles and stb_easy_font's segment font
// (Debian's libstb-dev, header only). The same tree, app, clock and size always give the same
// pixels, so an unchanged screen is the same image (the server's encoder cache recognises it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "vision/image_decode.h"

namespace tandem::agent {

struct ScreenStyle {
  int width = 720, height = 1560;  // pixels; the layout is in dp of a 360-dp-wide phone, scaled
  std::string app;                 // the accent colour and the title bar's fallback
  std::string clock = "09:30";     // the status bar's time
};

// Throws std::invalid_argument for a size outside 90..4096 x 90..8192.
vision::RgbImage render_screen(const nlohmann::json& tree, const ScreenStyle& style);

// PNG bytes (stb_image_write, deterministic).
std::vector<uint8_t> encode_png(const vision::RgbImage& img);

// "720x1560" -> {720, 1560}; throws std::invalid_argument.
std::pair<int, int> parse_size(const std::string& s);

}  // namespace tandem::agent
