package ticketd.client;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

/** TLS helpers: the SSLContext of a ticketd whose certificate a CA of your own signed. */
public final class Tls {
    private Tls() {}

    /**
     * An SSLContext that trusts exactly the CA certificates of a PEM file (the
     * file {@code scripts/certs.sh} writes as {@code ca.pem}, say), for
     * {@link TicketdClient.Builder#sslContext(SSLContext)}.
     *
     * @throws IOException              the file cannot be read
     * @throws GeneralSecurityException it holds no certificate, or one that does not parse
     */
    public static SSLContext trusting(Path caPem) throws IOException, GeneralSecurityException {
        KeyStore ks = KeyStore.getInstance(KeyStore.getDefaultType());
        ks.load(null, null);
        int n = 0;
        try (InputStream in = Files.newInputStream(caPem)) {
            for (Certificate cert : CertificateFactory.getInstance("X.509").generateCertificates(in)) {
                ks.setCertificateEntry("ca" + n++, cert);
            }
        }
        if (n == 0) {
            throw new GeneralSecurityException("ticketd: no certificate in " + caPem);
        }
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ks);
        SSLContext ctx = SSLContext.getInstance("TLS");
        ctx.init(null, tmf.getTrustManagers(), null);
        return ctx;
    }
}
