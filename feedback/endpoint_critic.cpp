#include "feedback/endpoint_critic.h"

#include "util/error.h"

namespace rlf {

void EndpointCriticOptions::validate(const std::string& prefix) const {
  client.validate(prefix);
  check(prompt.find("{response}") != std::string::npos, prefix,
        "prompt must contain {response} (the answer to critique)");
}

EndpointCritic::EndpointCritic(EndpointCriticOptions options) : options_(std::move(options)) {
  options_.validate("critic.");
  client_ = std::make_unique<ChatClient>(options_.client);
  if (options_.probe) client_->probe("check critic.base_url, critic.model and critic.api_key_env");
}

std::vector<Critique> EndpointCritic::critique(const std::vector<CritiqueRequest>& requests) {
  std::vector<std::vector<ChatMessage>> chats;
  for (const CritiqueRequest& r : requests) {
    std::vector<ChatMessage> m;
    if (!options_.system.empty()) m.push_back({"system", fill_feedback_template(options_.system, r)});
    m.push_back({"user", fill_feedback_template(options_.prompt, r)});
    chats.push_back(std::move(m));
  }
  std::vector<ChatResult> replies = client_->complete_many(chats);
  std::vector<Critique> out(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const ChatResult& res = replies[i];
    Critique& c = out[i];
    c.latency_s = res.latency_s;
    if (!res.ok) {
      c.error = res.error;
      continue;
    }
    c = critique_from_text(res.content);
    c.latency_s = res.latency_s;
  }
  return out;
}

}  // namespace rlf
