import time, requests

time.sleep(300)
r = requests.post("http://localhost:8000/v1/completions", json={"prompt": "Frontier is", "max_tokens": 32})
print(r.json())
